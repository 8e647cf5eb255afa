"""Any sentence-transformers model by hub name or local folder (LaBSE, distiluse, paraphrase-multilingual…).

Hub names download on ``load()`` (production machines with internet or a warm HF cache); a local folder
works offline. Never at construction time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.encoders.languages import SENTENCE_TRANSFORMERS_LANGUAGES


class SentenceTransformerEncoder(TextEncoder):
    def __init__(self, model: str, device: str = "cpu", languages: frozenset[str] | None = None) -> None:
        super().__init__()
        if not model:
            raise ValueError("sentence-transformers encoder needs a model name or path: sentence-transformers:<name>")
        self.model_name = model
        self.name = f"sentence-transformers:{model}"
        self.device = device
        self.languages = languages if languages is not None else SENTENCE_TRANSFORMERS_LANGUAGES.get(model)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(self.model_name, device=self.device)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        dim = get_dim()
        if dim is None:
            dim = int(self._model.encode(["dimension probe"]).shape[1])
        self.dim = int(dim)

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.encode(list(texts), batch_size=64, convert_to_numpy=True))
