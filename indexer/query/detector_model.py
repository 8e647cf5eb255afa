"""The language detector's model (py3langid), read from an uncompressed copy kept under ``CACHE_DIR/langid/``.

py3langid ships its model as an LZMA-compressed ``.npz`` (4.5 MB → 68 MB): decompressing it is ~0.55 s of the
~0.65 s of CPU its loading takes, on every start of a one-shot ``polyglot search`` (issue 36). The first load
keeps the decompressed ``.npz`` (named by the model file's size and modification time and py3langid's version);
later loads read its arrays with numpy (~0.06 s) and build the identifier exactly as ``from_model_file`` does
from the same arrays (``tests/encoders/test_detector_model.py`` compares the two). A cache: a copy that cannot be
written or read means the compressed model is read, as without one.
"""

from __future__ import annotations

import contextlib
import lzma
import shutil
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from indexer.atomic import atomic_open

FOLDER = "langid"  # under CACHE_DIR


def kept_model_path(cache_dir: Path) -> Path:
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    source = Path(MODEL_DIR) / MODEL_FILE
    stat = source.stat()
    try:
        library = version("py3langid")
    except PackageNotFoundError:
        library = "unknown"
    return Path(cache_dir) / FOLDER / f"model-{stat.st_size}-{stat.st_mtime_ns}-py3langid{library}.npz"


def read_detector(cache_dir: Path | None = None) -> Any:
    """py3langid's ``LanguageIdentifier`` of its bundled model, with normalised probabilities."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    if cache_dir is None:
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    try:
        kept = kept_model_path(cache_dir)
    except OSError:
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    try:
        if not kept.is_file():
            with lzma.open(Path(MODEL_DIR) / MODEL_FILE) as source, atomic_open(kept) as target:
                shutil.copyfileobj(source, target, length=1 << 20)
        return _from_arrays(kept)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, lzma.LZMAError):
        with contextlib.suppress(OSError):
            kept.unlink(missing_ok=True)  # damaged: decompressed again next time
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _from_arrays(path: Path) -> Any:
    """What ``LanguageIdentifier.from_model_file`` builds, from the decompressed arrays (py3langid.modelio's
    ``load_model``, minus the decompression)."""
    from py3langid.langid import LanguageIdentifier
    from py3langid.modelio import _to_array

    with np.load(path, allow_pickle=False) as data:
        ptc, pc, classes = data["ptc"], data["pc"], data["classes"].tolist()
        nextmove, row, output = _to_array(data["nextmove"]), _to_array(data["nextmove_row"]), data["out_feat"].tolist()
    return LanguageIdentifier(np.asarray(ptc), np.asarray(pc), classes, nextmove, output, norm_probs=True, tk_row=row)
