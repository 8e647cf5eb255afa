"""Where an index folder keeps its vectors, by kind, and how a new set replaces the old one without a window.

* ``flat``, ``pq-refine``, ``hnsw``, ``ivf-sq8``: one FAISS file, ``vectors.faiss``, rewritten atomically.
* ``ivf-pq-mmap``: a generation folder ``ivf-pq-mmap/g<time>/`` (see mmap_index.py), changed in place by
  appends and replaced as a whole by a rebuild.
* ``milvus-*`` (``POLYGLOT_INDEX_BACKEND=milvus``): a generation collection on the Milvus server
  (``milvus:<prefix>_g<time>``, see milvus_vectors.py), replaced as a whole by a rebuild.

The backend is chosen here, in :func:`load_vectors` and :func:`new_vectors`, and nowhere else.

The sidecar (``index.json``: ``index_type`` and ``files.vectors``) says which set is current, and it is written
last: a rebuild writes a complete new set first, so a crash at any point leaves the sidecar naming the last good
set. Sets the sidecar does not name (a rebuild that died, the set a rebuild replaced) are deleted by the next
writer that opens the folder.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np

from indexer.atomic import fsync_dir
from indexer.store.index_kinds import MILVUS_KINDS, MMAP_KIND, VectorIndexSettings
from indexer.store.milvus_vectors import FILES_PREFIX, MilvusVectors
from indexer.store.mmap_index import MmapIvfIndex
from indexer.store.row_file import RowFile
from indexer.store.sidecar import Sidecar
from indexer.store.vectors import VectorIndex

FAISS_NAME = "vectors.faiss"
GENERATIONS_DIR = MMAP_KIND

AnyVectors = VectorIndex | MmapIvfIndex | MilvusVectors


def load_vectors(folder: Path, sidecar: Sidecar, settings: VectorIndexSettings) -> AnyVectors | None:
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
        return MmapIvfIndex.open(folder / sidecar.files["vectors"], settings)
    if (folder / FAISS_NAME).exists():
        return VectorIndex.load(folder / FAISS_NAME, sidecar.index_type, settings)
    return None


def new_vectors(dim: int, settings: VectorIndexSettings) -> AnyVectors:
    """Empty vectors for an index that held none, on the configured backend."""
    if settings.backend == "milvus":
        return MilvusVectors.new_generation(dim, settings)
    return VectorIndex.create(dim, "flat", settings)


def vector_files(vectors: AnyVectors | None) -> str:
    """The sidecar's ``files.vectors`` entry for ``vectors`` (relative to the index folder)."""
    if isinstance(vectors, MilvusVectors):
        return vectors.files_entry
    if isinstance(vectors, MmapIvfIndex):
        return f"{GENERATIONS_DIR}/{vectors.folder.name}"
    return FAISS_NAME


def vector_bytes(folder: Path, vectors: AnyVectors | None) -> int:
    if isinstance(vectors, MmapIvfIndex):
        return vectors.disk_bytes()
    if isinstance(vectors, MilvusVectors):
        return 0  # on the Milvus server, not in the index folder
    path = folder / FAISS_NAME
    return path.stat().st_size if path.exists() else 0


def in_place(sidecar: Sidecar) -> bool:
    """Whether the sidecar names vectors changed in place by appends (generations), not rewritten whole."""
    return sidecar.index_type == MMAP_KIND or sidecar.index_type in MILVUS_KINDS


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
