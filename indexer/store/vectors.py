"""FAISS vector store: unit vectors under int64 ids (the SQL primary keys), inner product = cosine.

Index kind rule (``POLYGLOT_INDEX_KIND=auto``, thresholds in :class:`VectorIndexSettings`):

============================  =============  ==========================================  ========================
collection size n             kind           FAISS                                       memory per image (d dims)
============================  =============  ==========================================  ========================
n <= 2,000 (flat_max)         ``flat``       ``IndexIDMap2(IndexFlatIP)``: exact          4·d + 16 B (1280-d: 5.1 KB)
2,000 < n <= 50,000           ``pq-refine``  ``IndexIDMap2(IndexRefineFlat(              4·d + d/8 + 16 B
(exact_max)                                  IndexPQFastScan(d, d/4, 4 bits)))``         (1280-d: ~5.3 KB)
50,000 < n <= 500,000         ``hnsw``       ``IndexIDMap2(IndexHNSWFlat(d, M=32, IP))``  4·d + 8·M·~1.03 + 16 B
                                                                                         (1280-d: ~5.4 KB)
n > 500,000 (hnsw_max)        ``ivf-sq8``    ``IndexIDMap2(IndexIVFScalarQuantizer)``,    d + 8 + 16 B
                                             8-bit, nlist = 4·√n, nprobe = nlist/8      (1280-d: ~1.3 KB)
============================  =============  ==========================================  ========================

The 16 B per image are the id map (id list + reverse hash map of ``IndexIDMap2``, which lets us
reconstruct a stored vector by id).

``flat`` reads every stored vector for each query: 36 MB at 7,000 x 1,280 floats, more than this machine's
last-level cache, so it also evicts the text encoder's and the tower's weights between queries. ``pq-refine``
ranks every image on 4-bit product-quantized codes (d/8 bytes each, scanned with SIMD in registers), keeps the
best ``refine_factor``·k and re-ranks those by exact inner products with the stored float32 vectors: the scores
are the exact cosines, and on the 7,000-photo collection its top 20 and top 100 were the exhaustive ones for all
of 800 real caption queries (``benchmarks/index_kinds.md``), at a sixth of the search time. Beyond 50k images
HNSW keeps ~1 ms queries with recall > 0.95, and IVF-SQ8 cuts memory 4x for collections that no longer fit in
RAM as float32.

HNSW and ``pq-refine`` cannot delete in place: removing ids rebuilds from the kept vectors (exact, since both
store them uncompressed; ``pq-refine`` keeps its trained codebooks). Files are written atomically (serialize,
tmp, fsync, rename).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import faiss
import numpy as np
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from indexer.atomic import atomic_write_bytes

KINDS: tuple[str, ...] = ("flat", "pq-refine", "hnsw", "ivf-sq8")
# 4-bit codebooks have 16 centroids per sub-quantizer; FAISS's k-means wants >= 39 training points per centroid.
PQ_MIN_VECTORS = 39 * 16


class VectorIndexSettings(BaseSettings):
    """How the FAISS index is chosen and tuned (env prefix ``POLYGLOT_INDEX_``)."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_INDEX_", env_file=".env", extra="ignore")

    kind: Literal["auto", "flat", "pq-refine", "hnsw", "ivf-sq8"] = Field(
        default="auto", description="auto applies the size rule; anything else forces that kind."
    )
    flat_max: int = Field(default=2_000, ge=0, description="Largest collection scanned in full (flat).")
    exact_max: int = Field(
        default=50_000, ge=0, description="Largest collection ranked by exact re-ranking (pq-refine); HNSW above."
    )
    refine_factor: int = Field(
        default=10, ge=1, le=1000, description="pq-refine: candidates re-ranked exactly per result (k_factor)."
    )
    hnsw_max: int = Field(default=500_000, ge=0, description="Largest collection kept in HNSW; IVF-SQ8 above.")
    hnsw_m: int = Field(default=32, ge=4, le=128, description="HNSW graph degree M.")
    hnsw_ef_construction: int = Field(default=200, ge=8, le=2048)
    hnsw_ef_search: int = Field(default=128, ge=8, le=4096, description="HNSW search breadth (recall vs speed).")
    ivf_nlist: int | None = Field(default=None, ge=1, description="IVF lists; default 4·sqrt(n).")
    ivf_nprobe: int | None = Field(default=None, ge=1, description="IVF lists visited per query; default nlist/8.")


def choose_kind(count: int, settings: VectorIndexSettings) -> str:
    """The index kind for a collection of ``count`` images (see the module docstring)."""
    if settings.kind != "auto":
        # Codebooks cannot be trained on a handful of vectors: such a collection is scanned in full meanwhile.
        return "flat" if settings.kind == "pq-refine" and count < PQ_MIN_VECTORS else settings.kind
    if count <= min(settings.flat_max, settings.exact_max):
        return "flat"
    if count <= settings.exact_max:
        return "pq-refine"
    if count <= settings.hnsw_max:
        return "hnsw"
    return "ivf-sq8"


def bytes_per_vector(kind: str, dim: int, settings: VectorIndexSettings) -> float:
    """Approximate resident memory per stored vector, id map included."""
    id_map = 16.0
    if kind == "flat":
        return 4 * dim + id_map
    if kind == "pq-refine":
        return 4 * dim + pq_subquantizers(dim) / 2 + id_map
    if kind == "hnsw":
        # level 0 keeps 2·M neighbours (int32); upper levels add ~1/M of that on average.
        return 4 * dim + 4 * 2 * settings.hnsw_m * (1 + 1 / settings.hnsw_m) + id_map
    if kind == "ivf-sq8":
        return dim + 8 + id_map
    raise ValueError(f"unknown index kind {kind!r}; choose one of {', '.join(KINDS)}")


def pq_subquantizers(dim: int) -> int:
    """Sub-quantizers of the pq-refine codes: the most that divide ``dim`` with >= 4 dimensions each."""
    return max(m for m in range(1, max(1, dim // 4) + 1) if dim % m == 0)


@dataclass(frozen=True)
class SearchResult:
    ids: list[int]
    scores: list[float]


def _as_matrix(vectors: np.ndarray, dim: int) -> np.ndarray:
    matrix = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dim:
        raise ValueError(f"expected vectors of dimension {dim}, got shape {tuple(np.shape(vectors))}")
    return matrix


def _as_ids(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))


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
        settings: VectorIndexSettings | None = None,
        train_vectors: np.ndarray | None = None,
    ) -> VectorIndex:
        """An empty index; ``pq-refine`` and ``ivf-sq8`` are trained on ``train_vectors`` (needed)."""
        settings = settings or VectorIndexSettings()
        if kind not in KINDS:
            raise ValueError(f"unknown index kind {kind!r}; choose one of {', '.join(KINDS)}")
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
        settings: VectorIndexSettings | None = None,
    ) -> VectorIndex:
        """A new index of ``kind`` holding ``vectors`` under ``ids``."""
        settings = settings or VectorIndexSettings()
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
        id_array = _as_ids(ids)
        matrix = _as_matrix(vectors, self.dim)
        if len(id_array) != len(matrix):
            raise ValueError(f"{len(id_array)} ids for {len(matrix)} vectors")
        if len(id_array) == 0:
            return
        if len(np.unique(id_array)) != len(id_array) or np.isin(id_array, self.ids()).any():
            raise ValueError("duplicate ids: every id may be stored once")
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

    # ------------------------------------------------------------------ persistence
    def to_bytes(self) -> bytes:
        return bytes(faiss.serialize_index(self.index))

    def save(self, path: Path) -> int:
        """Atomically write the index; returns the file size in bytes."""
        data = self.to_bytes()
        atomic_write_bytes(path, data)
        return len(data)

    @classmethod
    def load(cls, path: Path, kind: str, settings: VectorIndexSettings | None = None) -> VectorIndex:
        data = np.frombuffer(Path(path).read_bytes(), dtype=np.uint8)
        index = faiss.deserialize_index(data)  # already downcast; wrapping again would double-free
        if not isinstance(index, faiss.IndexIDMap2 | faiss.IndexIVF):
            raise ValueError(f"{path} is not an id-mapped FAISS index")
        return cls(index, kind, settings or VectorIndexSettings())

    def copy(self) -> VectorIndex:
        return VectorIndex(faiss.clone_index(self.index), self.kind, self.settings)
