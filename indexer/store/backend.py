"""What an image index needs from the place its vectors live — exactly the operations it uses, no more: the one
interface every vector backend implements.

Three backends implement it:

* :class:`indexer.store.vectors.FaissFileVectors`: the in-RAM FAISS kinds (``flat``, ``pq-refine``, ``hnsw``,
  ``ivf-sq8``), one file ``vectors.faiss`` rewritten atomically;
* :class:`indexer.store.mmap_index.MmapIvfIndex`: ``ivf-pq-mmap``, codes in RAM and the full vectors memory-mapped
  from a generation folder changed in place;
* :class:`indexer.store.milvus_vectors.MilvusVectors`: ``milvus-*``, a generation collection on a Milvus server.

Which one an index folder uses is decided in one place, :mod:`indexer.store.vector_files` (``load_vectors``,
``new_vectors``, ``new_builder``); the image index (:mod:`indexer.image_index` and its ingest and maintenance
parts) only ever talks to this interface. Ids are the SQL primary keys; vectors are unit float32 rows; scores are
inner products (= cosines). A backend is not thread-safe by itself: the index holds a read/write lock around it.
Adding a backend: docs in CONTRIBUTING.md ("Where to add a vector backend") and ``tests/collection/test_vector_backends.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass
class Hit:
    """One image a search found: its id and its score (``ImageIndex.search`` answers lists of them)."""

    id: int
    score: float


@dataclass(frozen=True)
class SearchResult:
    """One query's hits, best first: ids and their scores (inner products)."""

    ids: list[int]
    scores: list[float]


class VectorBackend(Protocol):
    """The vectors of one image index, of one kind, in one place (a file, a generation folder, a collection)."""

    @property
    def kind(self) -> str:
        """The index kind recorded in the sidecar's ``index_type`` (``flat`` … ``ivf-pq-mmap``, ``milvus-*``)."""
        ...

    @property
    def files_entry(self) -> str:
        """Where these vectors live, as the sidecar's ``files.vectors`` names them (relative to the index folder,
        or ``milvus:<collection>``)."""
        ...

    def __len__(self) -> int: ...

    def ids(self) -> np.ndarray:
        """Every stored id, sorted (int64)."""
        ...

    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        """Store ``vectors`` under ``ids``; refuses (ValueError) an id given twice or already stored."""
        ...

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        """Remove the given ids (unknown ones are ignored); returns how many were removed."""
        ...

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[SearchResult]:
        """Best ``k`` per query row, best first; ``allowed``: only these ids, applied inside the search so that
        ``k`` hits come back whenever ``k`` stored ids are allowed (:mod:`indexer.store.filtered`)."""
        ...

    def reconstruct(self, id_: int) -> np.ndarray | None:
        """The stored vector of ``id_``, or None when it is not stored."""
        ...

    def reconstruct_many(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The stored vectors of ``ids``, in order (KeyError or RuntimeError for an id not stored)."""
        ...

    def commit(self) -> None:
        """Make every add and remove so far durable where ``files_entry`` says (atomically: a crash leaves the
        last saved state)."""
        ...

    def disk_bytes(self) -> int:
        """Bytes these vectors take in the index folder (0 for a vector server)."""
        ...

    def catch_up(self) -> None:
        """Take in what another writing process appended to the same set since it was opened (sets changed in
        place); nothing for sets that are saved whole (another process's save is loaded whole instead). Called
        with or without the folder's lock (a reading process): it reads only what a save made whole.
        When either is called: :mod:`indexer.store.revisions`."""
        ...

    def ping(self) -> None:
        """Raise :class:`indexer.store.failures.BackendUnavailableError` unless the backend answers now."""
        ...

    def drop_replaced(self) -> None:
        """Once the sidecar names this set: delete the sets it replaced that live outside the index folder (other
        generation collections on a vector server). Files in the folder are deleted by
        :func:`indexer.store.vector_files.remove_unnamed`."""
        ...


class VectorBuilder(Protocol):
    """A new set of vectors filled in chunks by a rebuild, used only once ``finish`` returns it (the old set serves
    meanwhile); ``abandon`` deletes what a failed rebuild wrote."""

    def append(self, ids: np.ndarray, vectors: np.ndarray) -> None: ...

    def finish(self) -> VectorBackend | None:
        """The new set; None when nothing was appended to a set kept in the index folder (a file or folder is
        not written empty; a Milvus generation is returned empty)."""
        ...

    def abandon(self) -> None: ...
