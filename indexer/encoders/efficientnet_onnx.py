"""EfficientNet-Lite0/Lite2 through ONNX Runtime: the default image backend once ``polyglot models build`` ran.

Same name, same preprocessing and the same pooled features as the eager PyTorch encoder (cosine ≥ 0.9999 on
real photos, tests/encoders/test_onnx_image.py), so the features cache, image spaces and indexes built with either
backend are interchangeable; ~3x the eager model's throughput on this 2-core CPU (benchmarks/indexing.md).

``precision="int8"`` (POLYGLOT_IMAGE_PRECISION, EfficientNet-Lite2 on the CPU) runs the statically quantised graph
of :mod:`indexer.export.efficientnet_int8`: ~0.65x the CPU time, vectors within the bound that keeps indexes and
served recall interchangeable with fp32 (docs/image-int8.md). Its features are cached apart (``cache_name``), so
an evaluation of one precision never reads the other's vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from indexer.built_models import BuiltModel, verify
from indexer.encoders.base import ImageEncoder
from indexer.encoders.imagenet import imagenet_class_names
from indexer.encoders.onnx_session import open_session
from indexer.encoders.preprocess import efficientnet_lite_pixels
from indexer.export.efficientnet import FEATURES_FILE, HEAD_FILE
from indexer.export.registry import IMAGE_EXPORTS, IMAGE_INT8_EXPORTS

_SIZES = {"efficientnet-lite0": 224, "efficientnet-lite2": 260}
SUB_BATCH = 4  # photos per session call (see the module docstring)
PRECISIONS = ("int8", "fp32")


class EfficientNetLiteOnnxEncoder(ImageEncoder):
    dim = 1280
    backend = "onnx"

    def __init__(
        self,
        name: str,
        models_dir: Path,
        device: str = "cpu",
        threads: int | None = None,
        spinning: bool = False,
        precision: str = "fp32",
    ) -> None:
        super().__init__()
        if name not in _SIZES:
            raise ValueError(f"unknown EfficientNet-Lite variant {name!r}; choose from {sorted(_SIZES)}")
        if precision not in PRECISIONS:
            raise ValueError(f"unknown image precision {precision!r}; choose int8 or fp32")
        if precision == "int8" and name not in IMAGE_INT8_EXPORTS:
            raise ValueError(f"{name} has no int8 build (only {', '.join(IMAGE_INT8_EXPORTS)}): use fp32")
        self.name = name
        self.precision = precision
        self.input_size = _SIZES[name]
        self.models_dir = Path(models_dir)
        self.device = device
        self.threads = threads
        self.spinning = spinning
        self.per_call_threads = not device.startswith("cuda")  # a GPU takes one call at a time
        self._session: Any = None
        self._single_session: Any = None  # one intra-op thread: predict_prepared(..., threads=1), opened on first use
        self._features_path: Path | None = None
        self._head: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def export(self) -> BuiltModel:
        """The fp32 build: the classifier head, and the features graph unless int8."""
        return IMAGE_EXPORTS[self.name]

    @property
    def cache_name(self) -> str:
        return self.name if self.precision == "fp32" else f"{self.name}-int8"

    def _load(self) -> None:
        files = verify(self.export, self.models_dir)  # the fp32 build: the head's file comes from it either way
        if self.precision == "int8":
            files = {**files, **verify(IMAGE_INT8_EXPORTS[self.name], self.models_dir)}  # its features graph
        self._features_path = files[FEATURES_FILE]
        self._session = open_session(
            self._features_path, threads=self.threads, device=self.device, spinning=self.spinning
        )
        with np.load(files[HEAD_FILE]) as head:
            self._head = (np.ascontiguousarray(head["weight"].T), head["bias"])

    def prepare(self, image: Image.Image) -> np.ndarray:
        return efficientnet_lite_pixels(image, self.input_size)

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self._predict_prepared([self.prepare(image) for image in images])

    def _predict_prepared(self, prepared: Sequence[np.ndarray]) -> np.ndarray:
        return _run(self._session, prepared)

    def _predict_prepared_on(self, prepared: Sequence[np.ndarray], threads: int) -> np.ndarray:
        if threads != 1 or not self.per_call_threads:
            return self._predict_prepared(prepared)
        with self._load_lock:  # (the base class's lock: free once loaded, and rebuilt when unpickled)
            if self._single_session is None:
                assert self._features_path is not None
                self._single_session = open_session(self._features_path, threads=1, device=self.device)
        return _run(self._single_session, prepared)

    def _classify(self, features: np.ndarray) -> np.ndarray:
        assert self._head is not None
        weight, bias = self._head
        logits = features.astype(np.float32) @ weight + bias
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        return probabilities / probabilities.sum(axis=1, keepdims=True)

    def classifier_head(self) -> tuple[np.ndarray, np.ndarray]:
        self._require_loaded()
        assert self._head is not None
        return self._head[0].astype(np.float32), self._head[1].astype(np.float32)

    @property
    def class_names(self) -> list[str]:
        return imagenet_class_names()


def _run(session: Any, prepared: Sequence[np.ndarray]) -> np.ndarray:
    """Features of ``prepared`` in calls of ``SUB_BATCH`` photos (ONNX Runtime releases the GIL while it runs)."""
    parts = [
        session.run(["features"], {"pixels": np.stack(prepared[start : start + SUB_BATCH])})[0]
        for start in range(0, len(prepared), SUB_BATCH)
    ]
    return np.asarray(parts[0] if len(parts) == 1 else np.concatenate(parts))
