"""The FAISS kinds: :class:`VectorIndex`, unit vectors under int64 ids (the SQL primary keys), inner product =
cosine — any FAISS index of the project (the caption index keeps one per language) —, and
:class:`FaissFileVectors`, the image index's backend for the in-RAM kinds: one ``VectorIndex`` saved whole to
``vectors.faiss`` in the index folder.

Which kind an index is, and how it is tuned, is decided by :mod:`indexer.store.index_kinds` (the size rule,
:class:`VectorIndexSettings`); the settings are always passed in, never read from the environment here.

HNSW and ``pq-refine`` cannot delete in place: removing ids rebuilds from the kept vectors (exact, since both
store them uncompressed; ``pq-refine`` keeps its trained codebooks). Files are written atomically (streamed into
a temporary file, fsync, rename) and read streamed: neither holds a serialised copy of the index in memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from indexer.atomic import atomic_open
from indexer.store.backend import SearchResult
from indexer.store.filtered import filtered_search
from indexer.store.index_kinds import (
    FAISS_KINDS,
    KINDS,
    PQ_MIN_VECTORS,
    VectorIndexSettings,
    bytes_per_vector,
    choose_kind,
    pq_subquantizers,
)

FAISS_NAME = "vectors.faiss"  # the in-RAM kinds' file in an image index folder

# The kind rule is re-exported: the vector store is where callers look for it.
__all__ = [
    "FAISS_NAME",
    "KINDS",
    "PQ_MIN_VECTORS",
    "FaissFileVectors",
    "SearchResult",
    "VectorIndex",
    "VectorIndexSettings",
    "bytes_per_vector",
    "choose_kind",
    "pq_subquantizers",
]


def _as_matrix(vectors: np.ndarray, dim: int) -> np.ndarray:
    matrix = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        raise ValueError(f"expected vectors of dimension {dim}, got shape {tuple(np.shape(vectors))}")
    return matrix


def _as_ids(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))


def checked_additions(
    ids: Sequence[int] | np.ndarray, vectors: np.ndarray, dim: int, stored: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, vectors)`` to add, as int64 and float32 arrays, checked: one id per vector, and no id given twice
    or already present (``stored(ids)`` → a boolean mask). Every index kind adds through it."""
    id_array = _as_ids(ids)
    matrix = _as_matrix(vectors, dim)
    if len(id_array) != len(matrix):
        raise ValueError(f"{len(id_array)} ids for {len(matrix)} vectors")
    if len(id_array) and (len(np.unique(id_array)) != len(id_array) or stored(id_array).any()):
        raise ValueError("duplicate ids: every id may be stored once")
    return id_array, matrix


# FAISS's file I/O through a Python file's write/read (an OSError they raise, ENOSPC included, comes back as itself);
# faiss-cpu's stubs do not declare them.
_CallbackWriter: Any = faiss.PyCallbackIOWriter  # type: ignore[attr-defined]
_CallbackReader: Any = faiss.PyCallbackIOReader  # type: ignore[attr-defined]


def write_faiss(index: Any, path: Path) -> int:
    """Atomically write a FAISS index, streamed into the file: no serialised copy of it is ever held in memory
    (``bytes(serialize_index(…))`` took 1.8 GB more to save a 1-GB flat index: benchmarks/vector_file_memory.md).
    Returns the file size in bytes."""
    with atomic_open(path) as handle:
        faiss.write_index(index, _CallbackWriter(handle.write))
    return Path(path).stat().st_size


def read_faiss(path: Path) -> Any:
    """A FAISS index read streamed from its file (memory: the index, not the file's bytes beside it)."""
    with Path(path).open("rb") as handle:
        return faiss.read_index(_CallbackReader(handle.read))


class VectorIndex:
    """A FAISS index of one kind behind ids; not thread-safe by itself (the collection holds the lock)."""

    def __init__(self, index: Any, kind: str, settings: VectorIndexSettings) -> None:
        self.index = index
        self.kind = kind
        self.settings = settings
        self._configure_search()

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(
        cls,
        dim: int,
        kind: str,
        settings: VectorIndexSettings,
        train_vectors: np.ndarray | None = None,
    ) -> VectorIndex:
        """An empty index; ``pq-refine`` and ``ivf-sq8`` are trained on ``train_vectors`` (needed)."""
        if kind not in FAISS_KINDS:
            raise ValueError(f"unknown FAISS index kind {kind!r}; choose one of {', '.join(FAISS_KINDS)}")
        inner: Any
        if kind == "flat":
            inner = faiss.IndexFlatIP(dim)
        elif kind == "pq-refine":
            if train_vectors is None or len(train_vectors) < PQ_MIN_VECTORS:
                raise ValueError(f"index kind {kind} needs at least {PQ_MIN_VECTORS} training vectors")
            # The factory owns its sub-indexes (a hand-built IndexRefineFlat would not keep its base alive).
            index = faiss.index_factory(dim, f"IDMap2,PQ{pq_subquantizers(dim)}x4fs,RFlat", faiss.METRIC_INNER_PRODUCT)
            index.train(_as_matrix(train_vectors, dim))
            return cls(index, kind, settings)
        elif kind == "hnsw":
            inner = faiss.IndexHNSWFlat(dim, settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efConstruction = settings.hnsw_ef_construction
        else:  # ivf-sq8
            if train_vectors is None or len(train_vectors) == 0:
                raise ValueError(f"index kind {kind} needs training vectors")
            train = _as_matrix(train_vectors, dim)
            # 4·sqrt(n) lists, but never fewer than 39 training points per list (k-means needs them).
            nlist = settings.ivf_nlist or round(4 * math.sqrt(len(train)))
            nlist = max(1, min(nlist, len(train) // 39 or 1))
            quantizer = faiss.IndexFlatIP(dim)
            inner = faiss.IndexIVFScalarQuantizer(
                quantizer, dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
            )
            # A hash-table direct map keeps reconstruct-by-id working after remove_ids.
            inner.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]
            sample = train
            if len(train) > 256 * nlist:  # k-means needs ~40-256 points per list; more only costs time
                picks = np.random.default_rng(0).choice(len(train), 256 * nlist, replace=False)
                sample = train[np.sort(picks)]
            inner.train(sample)
            # IVF stores ids itself; an IndexIDMap2 around it could not delete with a hash-table direct map.
            return cls(inner, kind, settings)
        return cls(faiss.IndexIDMap2(inner), kind, settings)

    @classmethod
    def build(
        cls,
        ids: Sequence[int] | np.ndarray,
        vectors: np.ndarray,
        kind: str,
        settings: VectorIndexSettings,
    ) -> VectorIndex:
        """A new index of ``kind`` holding ``vectors`` under ``ids``."""
        matrix = np.ascontiguousarray(vectors, dtype=np.float32)
        trained = kind in ("pq-refine", "ivf-sq8")
        index = cls.create(matrix.shape[1], kind, settings, train_vectors=matrix if trained else None)
        index.add(ids, matrix)
        return index

    def _inner(self) -> Any:
        if isinstance(self.index, faiss.IndexIDMap2):
            return faiss.downcast_index(self.index.index)
        return self.index

    def _configure_search(self) -> None:
        inner = self._inner()
        if isinstance(inner, faiss.IndexHNSW):
            inner.hnsw.efSearch = self.settings.hnsw_ef_search
        elif isinstance(inner, faiss.IndexRefine):
            inner.k_factor = float(self.settings.refine_factor)
        elif isinstance(inner, faiss.IndexIVF):
            inner.nprobe = self.settings.ivf_nprobe or max(1, inner.nlist // 8)

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        return int(self.index.d)

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        if isinstance(self.index, faiss.IndexIDMap2):
            return faiss.vector_to_array(self.index.id_map).astype(np.int64)
        lists = self.index.invlists
        parts = [
            faiss.rev_swig_ptr(lists.get_ids(number), lists.list_size(number)).copy()
            for number in range(lists.nlist)
            if lists.list_size(number)
        ]
        return np.sort(np.concatenate(parts)).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ mutation
    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        id_array, matrix = checked_additions(ids, vectors, self.dim, lambda given: np.isin(given, self.ids()))
        if len(id_array):
            self.index.add_with_ids(matrix, id_array)

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        """Remove the given ids (unknown ones are ignored); returns how many were removed."""
        id_array = _as_ids(ids)
        present = self.ids()
        doomed = np.intersect1d(present, id_array)
        if len(doomed) == 0:
            return 0
        if self.kind == "hnsw":
            keep = present[~np.isin(present, doomed)]
            self.index = VectorIndex.build(keep, self.reconstruct_many(keep), "hnsw", self.settings).index
            self._configure_search()
            return len(doomed)
        if self.kind == "pq-refine":
            keep = present[~np.isin(present, doomed)]
            vectors = self.reconstruct_many(keep)
            inner = faiss.clone_index(self._inner())  # the trained codebooks stay; no re-training
            inner.reset()
            rebuilt = faiss.IndexIDMap2(inner)
            rebuilt.add_with_ids(vectors, keep)
            self.index = rebuilt
            self._configure_search()
            return len(doomed)
        # IDSelectorArray: the only selector a hash-table direct map (IVF) accepts; fine for IDMap2 too.
        return int(self.index.remove_ids(faiss.IDSelectorArray(len(doomed), faiss.swig_ptr(doomed))))

    # ------------------------------------------------------------------ reading
    def search(self, vectors: np.ndarray, k: int) -> list[SearchResult]:
        """Top ``k`` per query row, best first; padding ids (-1) dropped."""
        matrix = _as_matrix(vectors, self.dim)
        if k <= 0 or len(self) == 0:
            return [SearchResult([], []) for _ in range(len(matrix))]
        k = min(k, len(self))
        inner = self._inner()
        if isinstance(inner, faiss.IndexHNSW):
            inner.hnsw.efSearch = max(self.settings.hnsw_ef_search, k)
        scores, ids = self.index.search(matrix, k)
        results = []
        for row_ids, row_scores in zip(ids, scores, strict=True):
            keep = row_ids >= 0
            results.append(SearchResult([int(i) for i in row_ids[keep]], [float(s) for s in row_scores[keep]]))
        return results

    def reconstruct(self, id_: int) -> np.ndarray | None:
        try:
            return np.asarray(self.index.reconstruct(int(id_)), dtype=np.float32)
        except RuntimeError:  # FAISS raises for ids it does not hold
            return None

    def reconstruct_many(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        id_array = _as_ids(ids)
        out = np.zeros((len(id_array), self.dim), dtype=np.float32)
        for row, id_ in enumerate(id_array):
            out[row] = self.index.reconstruct(int(id_))
        return out

    def reconstruct_present(self, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)`` of the given ids this index holds (filtered searches: a SQL row may lack its
        vector for a moment after a crash)."""
        id_array = _as_ids(ids)
        present = id_array[np.isin(id_array, self.ids())]
        return present, self.reconstruct_many(present)

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> int:
        """Atomically write the index (streamed: :func:`write_faiss`); returns the file size in bytes."""
        return write_faiss(self.index, path)

    @classmethod
    def load(cls, path: Path, kind: str, settings: VectorIndexSettings) -> VectorIndex:
        """Read the index streamed from the file: a server taking in another process's save holds the old index and
        the new one, nothing more."""
        index = read_faiss(path)
        if not isinstance(index, faiss.IndexIDMap2 | faiss.IndexIVF):
            raise ValueError(f"{path} is not an id-mapped FAISS index")
        return cls(index, kind, settings)

    def copy(self) -> VectorIndex:
        return VectorIndex(faiss.clone_index(self.index), self.kind, self.settings)


class FaissFileVectors:
    """The image index's backend for the in-RAM FAISS kinds (:class:`~indexer.store.backend.VectorBackend`): a
    :class:`VectorIndex` held whole in memory and saved whole, atomically, to ``<folder>/vectors.faiss``."""

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
        self.index.save(self.path)

    def disk_bytes(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def catch_up(self) -> None:
        """Nothing: the file is saved whole, so another process's save is loaded whole (indexer/store/revisions.py)."""

    def ping(self) -> None:
        """Nothing: in this process's memory."""

    def drop_replaced(self) -> None:
        """Nothing: a replaced set is a file in the folder (``vector_files.remove_unnamed``)."""
