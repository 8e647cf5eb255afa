"""Where an index folder keeps its vectors, by kind, and how a new set replaces the old one without a window.

* ``flat``, ``pq-refine``, ``hnsw``, ``ivf-sq8``: one FAISS file, ``vectors.faiss``, rewritten atomically.
* ``ivf-pq-mmap``: a generation folder ``ivf-pq-mmap/g<time>/`` (see mmap_index.py), changed in place by
  appends and replaced as a whole by a rebuild.
* ``milvus-*`` (``POLYGLOT_INDEX_BACKEND=milvus``): a generation collection on the Milvus server
  (``milvus:<prefix>_g<time>``, see milvus_vectors.py), replaced as a whole by a rebuild.

The backend is chosen here, in :func:`load_vectors`, :func:`new_vectors` and :func:`new_builder`, and nowhere
else: everything else talks to :class:`indexer.store.backend.VectorBackend`.

The sidecar (``index.json``: ``index_type`` and ``files.vectors``) says which set is current, and it is written
last: a rebuild writes a complete new set first, so a crash at any point leaves the sidecar naming the last good
set. Sets the sidecar does not name (a rebuild that died, the set a rebuild replaced) are deleted by the next
writer that opens the folder.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from indexer.atomic import fsync_dir
from indexer.store.backend import VectorBackend, VectorBuilder
from indexer.store.index_kinds import MILVUS_KINDS, MMAP_KIND, VectorIndexSettings
from indexer.store.milvus_vectors import FILES_PREFIX, MilvusVectors
from indexer.store.mmap_index import GENERATIONS_DIR, MmapIvfIndex
from indexer.store.row_file import RowFile
from indexer.store.sidecar import Sidecar
from indexer.store.vectors import FAISS_NAME, FaissFileVectors, VectorIndex

__all__ = [
    "FAISS_NAME",
    "GENERATIONS_DIR",
    "MmapBuilder",
    "changes_in_place",
    "in_place",
    "load_vectors",
    "new_builder",
    "new_vectors",
    "remove_unnamed",
    "vector_files",
]


def load_vectors(folder: Path, sidecar: Sidecar, settings: VectorIndexSettings) -> VectorBackend | None:
    """The vectors the sidecar names, or None for an index that holds none yet. An index whose vectors are on
    the other backend opens empty there: opening reconciles it with SQL, re-adding every vector from the
    features cache (that is how an index moves between FAISS and Milvus)."""
    named = sidecar.files.get("vectors", "")
    if settings.backend == "milvus":
        if named.startswith(FILES_PREFIX):
            return MilvusVectors.open(named, sidecar.dim, settings)
        return MilvusVectors.new_generation(sidecar.dim, settings)
    if named.startswith(FILES_PREFIX):
        return None
    if sidecar.index_type == MMAP_KIND:
        path = folder / sidecar.files["vectors"]
        with _readable(folder, path):
            return MmapIvfIndex.open(path, settings)
    if (folder / FAISS_NAME).exists():
        with _readable(folder, folder / FAISS_NAME):
            return FaissFileVectors.load(folder, sidecar.index_type, settings)
    return None


@contextmanager
def _readable(folder: Path, path: Path) -> Iterator[None]:
    """A vector file FAISS cannot read (garbage, cut off, not an id-mapped index) as the index's one-line refusal
    naming `polyglot index rebuild` (:func:`~indexer.store.opening.corrupt_vectors`), not FAISS's traceback."""
    from indexer.store.opening import corrupt_vectors

    try:
        yield
    except (RuntimeError, ValueError, EOFError, KeyError) as exc:  # FAISS raises RuntimeError; the checks ValueError
        raise corrupt_vectors(folder, path, exc) from None


def new_vectors(folder: Path, dim: int, settings: VectorIndexSettings) -> VectorBackend:
    """Empty vectors for an index that held none, on the configured backend."""
    if settings.backend == "milvus":
        return MilvusVectors.new_generation(dim, settings)
    return FaissFileVectors(VectorIndex.create(dim, "flat", settings), folder)


def new_builder(folder: Path, kind: str, dim: int | None, settings: VectorIndexSettings) -> VectorBuilder:
    """An empty new set of ``kind`` for a rebuild to fill: in RAM for the FAISS kinds, streamed into a new
    generation folder for ``ivf-pq-mmap`` or a new generation collection for ``milvus-*`` (a million photos
    never sit in memory at once)."""
    if kind in MILVUS_KINDS:
        return MilvusBuilder(dim, settings)
    if kind == MMAP_KIND:
        return GenerationBuilder(folder, settings)
    return FaissBuilder(folder, kind, settings)


def vector_files(vectors: VectorBackend | None) -> str:
    """The sidecar's ``files.vectors`` entry for ``vectors`` (relative to the index folder)."""
    return vectors.files_entry if vectors is not None else FAISS_NAME


def in_place(sidecar: Sidecar) -> bool:
    """Whether the sidecar names vectors changed in place by appends (generations), not rewritten whole."""
    return changes_in_place(sidecar.index_type)


def changes_in_place(kind: str) -> bool:
    """Whether vectors of ``kind`` are changed in place by appends (``ivf-pq-mmap`` folders, Milvus collections:
    another writing process's appends must be taken in), not rewritten whole (the FAISS files)."""
    return kind == MMAP_KIND or kind in MILVUS_KINDS


def remove_unnamed(folder: Path, sidecar: Sidecar) -> None:
    """Delete vector sets the sidecar does not name (call with the folder's write lock held)."""
    named = sidecar.files.get("vectors", FAISS_NAME) if in_place(sidecar) else FAISS_NAME
    generations = folder / GENERATIONS_DIR
    if generations.is_dir():
        for generation in generations.iterdir():
            if f"{GENERATIONS_DIR}/{generation.name}" != named:
                shutil.rmtree(generation, ignore_errors=True)
    if named != FAISS_NAME:
        (folder / FAISS_NAME).unlink(missing_ok=True)


class FaissBuilder:
    """The FAISS kinds: chunks gathered in RAM, then one ``VectorIndex.build`` (trained kinds need them all)."""

    def __init__(self, folder: Path, kind: str, settings: VectorIndexSettings) -> None:
        self.folder, self.kind, self.settings = folder, kind, settings
        self.ids: list[np.ndarray] = []
        self.vectors: list[np.ndarray] = []

    def append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.ids.append(np.asarray(ids, dtype=np.int64))
        self.vectors.append(vectors)

    def finish(self) -> FaissFileVectors | None:
        if not self.ids:
            return None
        ids = np.concatenate(self.ids)
        vectors = self.vectors[0] if len(self.vectors) == 1 else np.concatenate(self.vectors)
        self.ids, self.vectors = [], []
        return FaissFileVectors(VectorIndex.build(ids, vectors, self.kind, self.settings), self.folder)

    def abandon(self) -> None:
        self.ids, self.vectors = [], []


class GenerationBuilder:
    """``ivf-pq-mmap``: a new generation folder, created by the first chunk (a rebuild of no vectors writes none)."""

    def __init__(self, folder: Path, settings: VectorIndexSettings) -> None:
        self.folder, self.settings = folder, settings
        self.builder: MmapBuilder | None = None

    def append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.builder = self.builder or MmapBuilder(self.folder, vectors.shape[1], self.settings)
        self.builder.append(ids, vectors)

    def finish(self) -> MmapIvfIndex | None:
        return self.builder.finish() if self.builder is not None else None

    def abandon(self) -> None:
        if self.builder is not None:
            self.builder.abandon()


class MilvusBuilder:
    """``milvus-*``: a new generation collection; the old one serves until the sidecar switches."""

    def __init__(self, dim: int | None, settings: VectorIndexSettings) -> None:
        self.fresh = MilvusVectors.new_generation(dim, settings)

    def append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.fresh.add(ids, vectors)

    def finish(self) -> MilvusVectors:
        return self.fresh

    def abandon(self) -> None:
        self.fresh.drop()


class MmapBuilder:
    """Stream (id, vector) chunks into a new generation folder, then train and encode: memory stays bounded
    (the quantiser's sample and one chunk) whatever the collection size."""

    def __init__(self, folder: Path, dim: int, settings: VectorIndexSettings) -> None:
        generations = Path(folder) / GENERATIONS_DIR
        generations.mkdir(parents=True, exist_ok=True)
        self.settings = settings
        self.rows = RowFile.create(generations / f"g{time.time_ns()}", dim, settings.mmap_dtype)

    def append(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self.rows.append(np.asarray(ids, dtype=np.int64), vectors, sync=False)

    def finish(self) -> MmapIvfIndex:
        self.rows.sync()
        index = MmapIvfIndex.train(self.rows.folder, self.rows, self.settings)
        fsync_dir(self.rows.folder)
        return index

    def abandon(self) -> None:
        shutil.rmtree(self.rows.folder, ignore_errors=True)
