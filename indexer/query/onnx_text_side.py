"""The served student's text side without torch: what a one-shot ``polyglot search "dog"`` loads (issue 36).

The query pipeline's text side (:func:`indexer.query.models.load_models`) is built from torch modules: the
student's head is a :class:`~indexer.tower.TextTower`, and the student's package imports torch to rebuild and
export its trunk. Importing torch costs ~3 s of a command that then answers in milliseconds. A text query needs
none of it once the student's ONNX export is built (``polyglot models fetch`` / ``build`` does it, and so does any
first load): the trunk runs on ONNX Runtime, the head is four matrices read with safetensors' numpy reader, and both
are run by the same code as the full text side (:class:`~indexer.encoders.e5.E5OnnxEncoder`,
:func:`indexer.tower_head.run_head`), so the vectors are the same (``tests/cli/test_search_startup.py``).

:func:`load_onnx_text_side` answers None whenever that is not the whole story — the configured text side is not a
student folder (a research tower, SMALR), its export is missing or was built from another trunk delta (the lead
retrains the student: a new delta must be exported again, which the full path does), or the head was trained for
another image encoder — and the caller takes the full path, which builds or explains.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from indexer.asset_paths import STUDENT_FP32_FILE, STUDENT_INT8_FILE, STUDENT_TRUNK_DELTA, shipped_tower_path
from indexer.built_models import ChecksumError, ModelFileMissingError, read_manifest, verify
from indexer.encoders.e5 import E5OnnxEncoder, E5Tokenizer, E5Variant, E5Weights
from indexer.encoders.onnx_session import open_session
from indexer.export.registry import student_export, student_precision
from indexer.image_space import ImageSpace
from indexer.model_files import sha256_file
from indexer.settings import Settings
from indexer.tower_head import head_fingerprint, head_layers, linear_weights, run_head

# What a student folder's config.json says (indexer.student.model's KIND / TEXT_ENCODER, which import torch; the
# test checks they agree) and the files of a tower folder (indexer.tower's CONFIG_NAME / WEIGHTS_NAME).
STUDENT_KIND = "e5-student"
STUDENT_ENCODER = "e5-student"
CONFIG_FILE = "config.json"
HEAD_FILE = "model.safetensors"
OPTIMIZED_DIR = "onnx-optimized"  # under CACHE_DIR: the trunk's graph as ONNX Runtime optimised it on this machine


class StudentTrunk(E5OnnxEncoder):
    """The student's trunk from its existing ONNX export (never built here: see the module docstring)."""

    name = STUDENT_ENCODER

    def __init__(self, folder: Path, models_dir: Path, variant: E5Variant, device: str, cache_dir: Path) -> None:
        super().__init__(models_dir, variant=variant, device=device, export=student_export(folder))
        self.folder = folder
        self.cache_dir = cache_dir  # where the tokenizer's tables and the optimised graph are kept

    def _load(self) -> None:
        # Checking the build's checksums and opening its session run in native code that releases the GIL: in a
        # thread, beside the tokenizer's tables, which are Python (on two cores: ~0.2 s less of a one-shot search).
        with ThreadPoolExecutor(1) as pool:
            session = pool.submit(self._open_session)
            weights = E5Weights()
            tokenizer = E5Tokenizer.kept(weights, self.cache_dir / "tokenizer")
            self._session = session.result()
        self._weights, self._tokenizer = weights, tokenizer

    def _open_session(self) -> Any:
        built = self.export.folder(self.models_dir)
        if (read_manifest(built) or {}).get("source_sha256") != sha256_file(self.folder / STUDENT_TRUNK_DELTA):
            raise ModelFileMissingError(f"{built} was not built from {self.folder / STUDENT_TRUNK_DELTA}")
        graph = STUDENT_INT8_FILE if self.variant == "int8" else STUDENT_FP32_FILE
        # Every file's size; the checksum of the one graph opened, when ONNX Runtime reads it. Once its optimised
        # copy is kept (named by the file's size and modification time, and made only after this check passed), the
        # session opens that copy and never reads the file: hashing its 86 MB at every start would protect nothing
        # that is loaded (~0.07 s of CPU). The other precision's graph is never read, nor hashed.
        path = verify(self.export, self.models_dir, full=False)[graph]
        return open_session(
            path,
            threads=None,
            device=self.device,
            optimized_dir=self.cache_dir / OPTIMIZED_DIR,
            check_source=lambda: verify(self.export, self.models_dir, hashed={graph}),
        )


class OnnxTextSide:
    """Text of any of the student's languages → unit vectors in the image space (the full text side's ``embed``)."""

    def __init__(self, folder: Path, config: dict[str, Any], trunk: StudentTrunk) -> None:
        from safetensors.numpy import load_file

        self.folder = folder
        self.config = config
        self.trunk = trunk
        self.kinds = head_layers(len(config["hidden_dims"]) + 1, bool(config.get("final_relu", True)))
        self.head_state = load_file(str(folder / HEAD_FILE))
        self.linears = linear_weights(self.kinds, self.head_state)

    @property
    def name(self) -> str:
        return self.trunk.name

    @property
    def label(self) -> str:
        """As :attr:`indexer.query.models.Models.label` names the same text side: ``e5-student:student``."""
        return f"{self.name}:{self.folder.name}"

    @property
    def languages(self) -> list[str] | None:
        langs = self.trunk.languages
        return sorted(langs) if langs is not None else None

    def supports(self, lang: str) -> bool:
        return self.trunk.supports(lang)

    @property
    def image_encoder(self) -> str:
        return str(self.config["image_encoder"])

    @property
    def image_space(self) -> ImageSpace:
        return ImageSpace.from_config(self.config["image_space"])

    @property
    def fingerprint(self) -> str:
        """:func:`indexer.tower.tower_fingerprint` of this text side, without torch (one :func:`head_fingerprint`
        serves both), so what the full path cached under it (the concept vectors) serves here too."""
        delta = sha256_file(self.folder / STUDENT_TRUNK_DELTA)  # the student's weights_digest
        return head_fingerprint(str(self.config["text_encoder"]), self.head_state.items(), encoder_weights=delta)

    def embed(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        """Unit image-space vectors (``langs`` is read by no student: it has no language bridge)."""
        return run_head(self.kinds, self.linears, self.trunk.predict(texts))


def load_onnx_text_side(settings: Settings) -> OnnxTextSide | None:
    """The configured text side, loaded without torch, or None when only the full path can load it."""
    folder = Path(settings.models.tower_path or shipped_tower_path(settings.models.text_encoder)).resolve()
    try:
        config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict) or config.get("kind") != STUDENT_KIND or not (folder / HEAD_FILE).is_file():
        return None
    if config.get("image_encoder") != settings.models.image_encoder:
        return None  # the full path names the setting to change
    models_dir = settings.resolved_models_dir
    models = settings.models
    precision = student_precision(folder, models.e5_precision)
    trunk = StudentTrunk(folder, models_dir, precision, models.device, settings.resolved_cache_dir)
    try:
        trunk.load()  # not built, or built from another delta: the full path exports this one
    except (OSError, ModelFileMissingError, ChecksumError):
        return None
    return OnnxTextSide(folder, config, trunk)
