"""``ImageIndex``: the one object the CLI and the service use to fill, search and maintain an image index.

A facade over three parts, one role each (``indexer/store/``): :class:`~indexer.store.photo_ingest.PhotoIngest`
(photos in: decode → features → rows → vectors), :class:`~indexer.store.maintenance.Maintenance` (write sessions,
persist, reconcile, remove, rebuild, re-encode, stats) and the vector backend behind
:class:`~indexer.store.backend.VectorBackend` (FAISS file, memory-mapped IVF-PQ or Milvus, chosen in
:mod:`indexer.store.vector_files`), all sharing one :class:`~indexer.store.index_state.IndexState`.

On disk (one folder, ``settings.resolved_index_dir``)::

    index.json        sidecar: format version, encoder, dim, index type, image space, count, times, versions
    vectors.faiss     FAISS index of unit vectors, id = SQL primary key (all kinds but ivf-pq-mmap)
    ivf-pq-mmap/g*/   ivf-pq-mmap: codes + memory-mapped vectors (indexer/store/mmap_index.py)
    (milvus-*)        POLYGLOT_INDEX_BACKEND=milvus: the vectors in a Milvus collection named in index.json instead
    metadata.sqlite   image metadata (unless POLYGLOT_DATABASE_URL points elsewhere, e.g. PostgreSQL)
    uploads/          images uploaded through the service, named <sha256><ext>

Commit protocol (why FAISS and SQL ids always agree): SQL is the source of truth and raw CNN features are
durable in the features cache before any row refers to them. Per batch: features → cache, rows → one SQL
transaction (commit), vectors → in-memory FAISS. The FAISS file is rewritten atomically every
``CHECKPOINT_SECONDS`` and at the end (and on Ctrl-C). Removal drops vectors in memory first, then deletes
rows, then rewrites the file. So after a crash the FAISS file can only hold ids SQL no longer has, or miss
ids SQL has; :meth:`ImageIndex.open` reconciles both (drop / re-add from the features cache). Paths are unique
in SQL, so a re-run after a crash skips what was committed and never duplicates.
Threads: searches take a shared lock, FAISS mutations/swaps an exclusive one (no reader sees a half-changed
index); writes are serialised in-process and across processes (``flock`` on ``.write.lock``).
Processes: each save increments the sidecar's ``revision``; a writer takes in what another process saved before it
writes (never saving over it), and a reader within a second (:mod:`indexer.store.revisions`)."""

from __future__ import annotations

import builtins
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.encoders.base import ImageEncoder
from indexer.encoders.factory import build_image_encoder
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store import opening
from indexer.store.backend import Hit
from indexer.store.failures import translated
from indexer.store.index_state import IndexState
from indexer.store.ingest import AddReport
from indexer.store.locks import IndexBusyError
from indexer.store.maintenance import Maintenance
from indexer.store.metadata import ImageRecord, MetadataStore, sqlite_url
from indexer.store.opening import IndexFileCorruptError, IndexMismatchError, IndexNotFoundError, MetadataMissingError
from indexer.store.photo_ingest import PhotoIngest
from indexer.store.revisions import Revisions
from indexer.store.sidecar import DB_NAME
from indexer.store.vector_files import load_vectors

__all__ = [
    "AddReport",
    "Hit",
    "ImageIndex",
    "ImageRecord",
    "IndexBusyError",
    "IndexFileCorruptError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "MetadataMissingError",
]

CHECKPOINT_SECONDS = 30.0  # how often a long add saves its vectors (read at each add: tests shorten it)


class ImageIndex:
    """One image index folder, opened: search it, add photos, remove them, rebuild it, describe it."""

    def __init__(self, state: IndexState, revisions: Revisions) -> None:
        self._state = state
        self._maintenance = Maintenance(state, revisions)
        self._ingest = PhotoIngest(state, self._maintenance)
        self.rebuilt_on_open: AddReport | None = None

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        image_space: ImageSpace | None = None,
        create: bool = True,
        encoder: ImageEncoder | None = None,
        rebuild_if_stale: bool = False,
        progress: bool = False,
        repair_vectors: bool = False,
    ) -> ImageIndex:
        """Open (or create) the index in ``settings.resolved_index_dir`` and make its vectors agree with SQL.

        A folder whose sidecar counts vectors but whose ``metadata.sqlite`` is gone (or, with
        ``POLYGLOT_DATABASE_URL``, whose database has no photo table or no photo rows) is refused
        (:class:`MetadataMissingError`) and left untouched, nothing created: the repair would otherwise drop every
        vector.

        The vector backend, the index kind and its tuning come from ``settings.vector_index``.
        ``rebuild_if_stale``: an index built in another image space is rebuilt instead of refused (the report is
        kept in ``rebuilt_on_open``); ``progress`` shows a bar for that rebuild.

        A metadata database or vector file that cannot be read (garbage, cut off) is refused
        (:class:`~indexer.store.opening.IndexFileCorruptError`, one line naming what to run), nothing changed;
        ``repair_vectors`` (``polyglot index rebuild``): a damaged vector file is re-derived from the rows instead.
        """
        folder = Path(settings.resolved_index_dir)
        revisions = Revisions(folder)  # before the sidecar is read: a save after this is noticed
        sidecar = opening.read_sidecar(folder, create=create)
        # Before anything can create the database: an empty one would make the repair below drop every vector.
        opening.check_metadata(folder, sidecar, settings.database_url, settings.database_timeout_seconds)
        encoder = encoder or build_image_encoder(settings)
        opening.check_encoder(folder, sidecar, encoder)
        space = image_space or opening.default_image_space(settings)
        stale = opening.is_stale(folder, sidecar, space, rebuild_if_stale=rebuild_if_stale)
        if sidecar is None:
            sidecar = opening.create_sidecar(folder, encoder, space)
        if settings.database_url is None:  # before SQLAlchemy sets a journal mode on it: garbage is refused
            opening.check_sqlite_file(folder, folder / DB_NAME)
        try:
            with translated(folder):  # the database's first connection: an outage is the index's one clear error
                store = MetadataStore(
                    settings.database_url or sqlite_url(folder / DB_NAME),
                    timeout=settings.database_timeout_seconds,
                    cache_dir=settings.resolved_cache_dir,
                )
        except Exception as exc:
            if opening.is_corrupt_sqlite(exc):  # a SQLite file named by POLYGLOT_DATABASE_URL
                raise opening.corrupt_metadata(folder, "(POLYGLOT_DATABASE_URL)", exc) from None
            raise
        try:
            vectors = load_vectors(folder, sidecar, settings.vector_index)
        except IndexFileCorruptError as exc:
            if not (repair_vectors and exc.part == "vectors"):
                store.close()
                raise
            vectors, stale = None, True  # rebuilt below from the rows (features cache, re-encoding misses)
        index = cls(IndexState(folder, settings, encoder, space, sidecar, store, vectors), revisions)
        try:
            if stale:
                index.rebuilt_on_open = index.rebuild(progress=progress)
            else:
                index._maintenance.reconcile_if_free()
        except BaseException:
            index.close()
            raise
        return index

    # ------------------------------------------------------------------ what it is
    @property
    def folder(self) -> Path:
        return self._state.folder

    @property
    def settings(self) -> Settings:
        return self._state.settings

    @property
    def encoder(self) -> ImageEncoder:
        return self._state.encoder

    @property
    def store(self) -> MetadataStore:
        """The photos' rows (metadata, paths, filters)."""
        return self._state.store

    @property
    def info(self) -> dict[str, Any]:
        return self._state.sidecar.to_json()

    @property
    def image_space(self) -> ImageSpace:
        return self._state.space

    @property
    def index_kind(self) -> str:
        """The index kind in use (the size rule's pick when the index was last grown or rebuilt)."""
        return self._maintenance.kind()

    @property
    def dim(self) -> int | None:
        return self._state.sidecar.dim

    @property
    def read_only_reason(self) -> str | None:
        """Why the index serves its last saved state read-only (its pending save failed: no space), or None."""
        return self._state.read_only_reason

    def __len__(self) -> int:
        """Vectors in the index (a search's ``total_images``: read here, as ``search`` reads, so that a text query
        runs through no more modules than the lock and the backend, and the revision check once a second)."""
        self._take_in_saves()
        state = self._state
        with state.rw.read():
            return len(state.vectors) if state.vectors is not None else 0

    # ------------------------------------------------------------------ reading
    def _take_in_saves(self) -> None:
        """Serve what another process saved to the folder (``serve`` beside ``index watch``) within
        ``revisions.REFRESH_SECONDS``: between checks a clock read, at a check one ``stat``; the sidecar and the
        vectors are read only when another process saved (:mod:`indexer.store.revisions`)."""
        revisions = self._maintenance.revisions
        if time.monotonic() >= revisions.next_check and revisions.replaced():
            self._maintenance.refresh()

    def search(
        self, vectors: np.ndarray, k: int, offset: int = 0, allowed: np.ndarray | None = None
    ) -> builtins.list[builtins.list[Hit]]:
        """Best ``k`` hits per query row after skipping ``offset``, best first; ``allowed``: only these ids
        (a filter, applied inside the search: :mod:`indexer.store.filtered`). What another process saved to the
        folder is served within ``revisions.REFRESH_SECONDS`` (:mod:`indexer.store.revisions`)."""
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if self.dim is not None and queries.shape[1] != self.dim:
            raise ValueError(f"query vectors have {queries.shape[1]} dimensions; the index stores {self.dim}")
        skip = max(0, offset)
        self._take_in_saves()
        state = self._state
        with state.rw.read():
            if state.vectors is None or k <= 0:
                return [[] for _ in range(len(queries))]
            results = state.vectors.search(queries, k + skip, allowed)
        return [[Hit(i, s) for i, s in zip(r.ids, r.scores, strict=True)][skip : skip + k] for r in results]

    def vector(self, id: int) -> np.ndarray | None:
        self._take_in_saves()
        state = self._state
        with state.rw.read():
            return state.vectors.reconstruct(id) if state.vectors is not None else None

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        """Stored vectors of indexed ids, in order (CLC-C re-ranks search candidates by their exact scores)."""
        state = self._state
        with state.rw.read():
            if state.vectors is None:
                raise KeyError("the index holds no vectors")
            return state.vectors.reconstruct_many(ids)

    def raw_features(self, id: int) -> np.ndarray | None:
        """The image encoder's features of an indexed photo, before the image space (cached, else re-encoded)."""
        record = self.store.get(id)
        if record is None:
            return None
        found = self._state.feature_cache().get_many([record.sha256]).get(record.sha256)
        if found is not None:
            return found
        features, _ = self._maintenance.features_for([(record.id, record.sha256, record.path)], progress=False)
        return features.get(record.id)

    def get(self, id: int) -> ImageRecord | None:
        return self.store.get(id)

    def list(self, offset: int = 0, limit: int = 100) -> builtins.list[ImageRecord]:
        return self.store.page(offset, limit)

    def stats(self) -> dict[str, Any]:
        """Counts, kind, sizes and dates (`polyglot index stats`)."""
        return self._maintenance.stats()

    def check_backends(self) -> None:
        """Raise :class:`~indexer.store.failures.BackendUnavailableError` unless the metadata database (and the
        vector server, for the Milvus backend) answer now; ``/ready`` asks this on every call."""
        self._maintenance.check_backends()

    # ------------------------------------------------------------------ writing
    def add_paths(
        self, paths: Sequence[Path], metadata: Mapping[Path, dict] | None = None, *, progress: bool = True
    ) -> AddReport:
        """Index image files (unchanged ones skipped, changed ones replaced); ``metadata``: title, caption, tags
        and extra fields by path."""
        return self._ingest.add_paths(paths, metadata, progress=progress, checkpoint_seconds=CHECKPOINT_SECONDS)

    def add_image_bytes(self, data: bytes, filename: str, metadata: dict | None = None) -> ImageRecord:
        """Index an uploaded image, stored under ``uploads/`` (the same bytes twice make one record)."""
        return self._ingest.add_upload(data, filename, metadata)[0]

    def add_upload(self, data: bytes, filename: str, metadata: dict | None = None) -> tuple[ImageRecord, bool]:
        """:meth:`add_image_bytes`, and whether this call created the record (False: the bytes were indexed
        already, whether by an earlier upload or by one running at the same time)."""
        return self._ingest.add_upload(data, filename, metadata)

    def remove(self, ids: Sequence[int]) -> int:
        """Remove photos by id (unknown ids are ignored); returns how many were removed."""
        return self._maintenance.remove(ids)

    def rebuild(self, *, progress: bool = True) -> AddReport:
        """Re-derive every vector (cached raw features, re-encoding on a miss) in the current image space,
        in the index kind the size rule picks now. Rows whose image can no longer be read are dropped
        (reported in ``failed``)."""
        return self._maintenance.rebuild(progress=progress)

    def close(self) -> None:
        self._state.close()

    def __enter__(self) -> ImageIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
