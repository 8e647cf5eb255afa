"""The in-RAM FAISS kinds as an image index's vector backend: one :class:`~indexer.store.vectors.VectorIndex`
(``flat``, ``pq-refine``, ``hnsw`` or ``ivf-sq8``), held whole in memory and saved whole, atomically, to
``vectors.faiss`` in the index folder.

``VectorIndex`` itself knows nothing of index folders (the caption index keeps one per language under other
names); this class adds what :class:`~indexer.store.backend.VectorBackend` asks of a backend on top of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.atomic import atomic_write_bytes
from indexer.store.filtered import filtered_search
from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.vectors import SearchResult, VectorIndex

FAISS_NAME = "vectors.faiss"


class FaissFileVectors:
    """A FAISS index of one kind, kept at ``<folder>/vectors.faiss``."""

    def __init__(self, index: VectorIndex, folder: Path) -> None:
        self.index = index
        self.path = Path(folder) / FAISS_NAME

    @classmethod
    def load(cls, folder: Path, kind: str, settings: VectorIndexSettings) -> FaissFileVectors:
        return cls(VectorIndex.load(Path(folder) / FAISS_NAME, kind, settings), folder)

    # ------------------------------------------------------------------ what the index reads
    @property
    def kind(self) -> str:
        return self.index.kind

    @property
    def dim(self) -> int:
        return self.index.dim

    @property
    def files_entry(self) -> str:
        return FAISS_NAME

    def __len__(self) -> int:
        return len(self.index)

    def ids(self) -> np.ndarray:
        return self.index.ids()

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[SearchResult]:
        if allowed is None:
            return self.index.search(queries, k)
        return filtered_search(self.index, queries, k, allowed)

    def reconstruct(self, id_: int) -> np.ndarray | None:
        return self.index.reconstruct(id_)

    def reconstruct_many(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        return self.index.reconstruct_many(ids)

    # ------------------------------------------------------------------ what the index changes
    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        self.index.add(ids, vectors)

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        return self.index.remove(ids)

    def commit(self) -> None:
        atomic_write_bytes(self.path, self.index.to_bytes())

    def disk_bytes(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def catch_up(self) -> None:
        """Nothing: the file is rewritten whole; reconciling on open covers another process's writes."""

    def ping(self) -> None:
        """Nothing: in this process's memory."""

    def drop_replaced(self) -> None:
        """Nothing: a replaced set is a file in the folder (``vector_files.remove_unnamed``)."""
