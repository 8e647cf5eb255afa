"""The language detector's model (py3langid), read from an uncompressed copy kept under ``CACHE_DIR/langid/``.

py3langid ships its model as an LZMA-compressed ``.npz`` (4.5 MB → 68 MB): decompressing it is ~0.55 s of the
~0.65 s of CPU its loading takes, on every start of a one-shot ``polyglot search`` (issue 36). The first load
keeps the decompressed arrays, one ``.npy`` file each, in a folder named by the model file's size and modification
time and py3langid's version. Later loads map the two large ones instead of reading them: the feature table
(28 MB), of which a query reads the rows of its features (a restriction to some languages copies their columns),
and the tokenizer's state machine (39 MB), of which a query visits a few states. The identifier is built exactly as
``from_model_file`` builds it from the same arrays, the state machine being a view of the mapped file rather than
a copy (``tests/encoders/test_detector_model.py`` compares the two). A cache: a copy that cannot be written or read
means the compressed model is read, as without one.
"""

from __future__ import annotations

import io
import lzma
import os
import shutil
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

FOLDER = "langid"  # under CACHE_DIR
ARRAYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")  # the model's (py3langid.modelio)


def kept_model_path(cache_dir: Path) -> Path:
    """The folder of the kept arrays (``<name>.npy`` for each of :data:`ARRAYS`)."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    source = Path(MODEL_DIR) / MODEL_FILE
    stat = source.stat()
    try:
        library = version("py3langid")
    except PackageNotFoundError:
        library = "unknown"
    return Path(cache_dir) / FOLDER / f"model-{stat.st_size}-{stat.st_mtime_ns}-py3langid{library}"


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
        if not kept.is_dir():
            _keep(Path(MODEL_DIR) / MODEL_FILE, kept)
        return _from_arrays(kept)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, lzma.LZMAError):
        shutil.rmtree(kept, ignore_errors=True)  # damaged: decompressed again next time
        return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _keep(source: Path, kept: Path) -> None:
    """Decompress the model's arrays into ``kept``: written whole in a folder of this process, then renamed."""
    partial = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        with lzma.open(source) as compressed:
            archive = io.BytesIO(compressed.read())  # the .npz's zip directory is at its end: read whole, once
        with np.load(archive, allow_pickle=False) as data:
            for name in ARRAYS:
                np.save(partial / f"{name}.npy", data[name], allow_pickle=False)
        try:
            os.rename(partial, kept)
        except OSError:
            if not kept.is_dir():  # not another process's copy, kept meanwhile
                raise
        # The same model as one .npz (an earlier version kept it so): garbage now.
        kept.with_name(f"{kept.name}.npz").unlink(missing_ok=True)
    finally:
        shutil.rmtree(partial, ignore_errors=True)


def _from_arrays(folder: Path) -> Any:
    """What ``LanguageIdentifier.from_model_file`` builds, from the decompressed arrays (py3langid.modelio's
    ``load_model``, minus the decompression), the two large ones mapped."""
    from py3langid.langid import LanguageIdentifier
    from py3langid.modelio import _to_array

    def array(name: str, mapped: bool = False) -> np.ndarray:
        return np.load(folder / f"{name}.npy", mmap_mode="r" if mapped else None, allow_pickle=False)

    ptc, pc, classes = array("ptc", mapped=True), array("pc"), array("classes").tolist()
    # Indexed item by item as the library's array('I') is (uint32 either way: py3langid's _to_array picks the type
    # code by item size), without copying the 39 MB into one.
    nextmove = array("nextmove", mapped=True).data
    row, output = _to_array(array("nextmove_row")), array("out_feat").tolist()
    return LanguageIdentifier(np.asarray(ptc), pc, classes, nextmove, output, norm_probs=True, tk_row=row)
