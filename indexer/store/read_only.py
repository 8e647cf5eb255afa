"""An image index folder opened only to search it, without SQLAlchemy: what a one-shot ``polyglot search`` opens
(issue 36).

:meth:`indexer.image_index.ImageIndex.open` is the write path's opener: it builds the SQLAlchemy store (its ORM
metadata alone is ~1 s of a one-shot command's start-up on two loaded cores), adds the columns an older index
lacks, and repairs what a killed writer left. A search that only reads needs none of that when there is nothing
to repair or migrate. :meth:`ReadOnlyIndex.open` reads the same sidecar, makes the same encoder and image-space
checks (:mod:`indexer.store.opening`), loads the same vectors (:func:`~indexer.store.vector_files.load_vectors`)
and reads the rows with :mod:`sqlite3` on a read-only connection. It answers None — the caller then takes
``ImageIndex.open``, whose answer is today's — whenever that would not be the whole story:

* the metadata is not the folder's SQLite file (``POLYGLOT_DATABASE_URL``) or the vectors are on Milvus;
* the database file or its ``images`` table is missing (when the sidecar counts no vectors yet: a folder that
  holds vectors is refused here as ``ImageIndex.open`` refuses it, :class:`~indexer.store.opening.MetadataMissingError`),
  or lacks a column it reads (an index from before a migration: ``ImageIndex.open`` adds the column);
* the vectors and the rows do not hold the same ids, or the sidecar's count is not the vectors' (a writer was
  killed, or is writing now: ``ImageIndex.open`` repairs the first and serves the second as it stands).

So a search through it finds exactly what a search through ``ImageIndex`` finds (the same vector backend's
``search``, the same rows; ``tests/cli/test_search_fast_path.py``), and it changes nothing in the folder (SQLite
opens its shared-memory and WAL files beside a WAL database for any reader; nothing is written to them).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from indexer.encoders.base import ImageEncoder
from indexer.encoders.factory import build_image_encoder
from indexer.image_space import ImageSpace
from indexer.places import Place
from indexer.settings import Settings
from indexer.store import opening
from indexer.store.backend import Hit, VectorBackend
from indexer.store.failures import BackendUnavailableError
from indexer.store.sidecar import DB_NAME, Sidecar
from indexer.store.vector_files import load_vectors

__all__ = ["ReadOnlyIndex", "ReadOnlyRows"]

# As the SQLAlchemy store reads (indexer/store/sql.py): IN lists of at most 900 ids (SQLite's bound-parameter limit
# was 999 before 3.32), and a writer's lock waited for up to 30 s (its busy_timeout).
_BATCH = 900
_BUSY_TIMEOUT_SECONDS = 30.0
# The columns of ``images`` read here (an index made before one of them was added is migrated by ImageIndex.open).
_COLUMNS = frozenset({"id", "path", "sha256", "taken_at", "city", "region", "country"})


class ReadOnlyRows:
    """The ``images`` rows a search answer shows, read from the index's SQLite file (never written)."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self.path = path

    @classmethod
    def open(cls, path: Path, timeout: float = _BUSY_TIMEOUT_SECONDS) -> ReadOnlyRows | None:
        """The rows of the SQLite file at ``path``; None when it or its table is missing or lacks a column read
        here. A file that is not a database, or a lock held longer than ``timeout`` seconds:
        :class:`BackendUnavailableError`."""
        if not path.is_file():
            return None
        try:
            connection = opening.connect_read_only(path, timeout, check_same_thread=False)
        except sqlite3.Error:
            return None  # cannot be opened read-only (a folder it may not read in): the full path explains
        rows = cls(connection, path)
        try:
            columns = {str(row[1]) for row in rows._query("PRAGMA table_info(images)", ())}
        except BaseException:
            rows.close()
            raise
        if not columns >= _COLUMNS:
            rows.close()
            return None
        return rows

    def _query(self, sql: str, parameters: Sequence[object]) -> list[tuple]:
        try:
            return self._connection.execute(sql, parameters).fetchall()
        except sqlite3.Error as exc:  # locked past the time-out, not a database, unreadable: one clear line
            if opening.is_corrupt_sqlite(exc):  # damaged: retrying will not help, what to run is named
                raise opening.corrupt_metadata(self.path.parent, str(self.path), exc) from None
            raise BackendUnavailableError("database", f"{self.path}: {exc}") from exc

    def _by_ids(self, columns: str, ids: Sequence[int]) -> Iterator[tuple]:
        unique = sorted({int(i) for i in ids})
        for start in range(0, len(unique), _BATCH):
            chunk = unique[start : start + _BATCH]
            marks = ",".join("?" * len(chunk))
            yield from self._query(f"SELECT id, {columns} FROM images WHERE id IN ({marks})", chunk)

    def ids(self) -> np.ndarray:
        """Every row's id, ascending."""
        found = self._query("SELECT id FROM images ORDER BY id", ())
        return np.fromiter((row[0] for row in found), dtype=np.int64, count=len(found))

    def id_keys(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """``(id, sha256, path)`` of the given ids, by id (``MetadataStore.id_keys``)."""
        return sorted((int(i), str(sha), str(path)) for i, sha, path in self._by_ids("sha256, path", ids))

    def taken(self, ids: Sequence[int]) -> dict[int, datetime | None]:
        """Capture times (local wall clock, naive) of the given ids (``MetadataStore.taken``)."""
        # SQLAlchemy stores a DateTime in SQLite as ISO text ("2024-06-01 12:00:00.000000"), parsed here as it does.
        return {int(i): datetime.fromisoformat(t) if t else None for i, t in self._by_ids("taken_at", ids)}

    def places(self, ids: Sequence[int]) -> dict[int, Place]:
        """City, region and country of the given ids (``MetadataStore.places``)."""
        return {
            int(i): Place(city, region, country)
            for i, city, region, country in self._by_ids("city, region, country", ids)
        }

    def close(self) -> None:
        self._connection.close()


class ReadOnlyIndex:
    """One image index folder, opened to search it (see the module docstring): ``len``, ``search`` and ``store``
    (its rows) as :class:`~indexer.image_index.ImageIndex` has them."""

    def __init__(self, folder: Path, sidecar: Sidecar, vectors: VectorBackend | None, rows: ReadOnlyRows) -> None:
        self.folder = folder
        self.sidecar = sidecar
        self.vectors = vectors
        self.store = rows

    @classmethod
    def open(
        cls, settings: Settings, image_space: ImageSpace, *, encoder: ImageEncoder | None = None
    ) -> ReadOnlyIndex | None:
        """The index in ``settings.resolved_index_dir`` as it is on disk, or None when only ``ImageIndex.open``
        can open it as ``polyglot search`` needs (see the module docstring). The refusals are ``ImageIndex.open``'s:
        :class:`~indexer.store.opening.IndexNotFoundError`, :class:`~indexer.store.opening.IndexMismatchError`,
        :class:`~indexer.store.sidecar.SidecarError`, :class:`~indexer.store.opening.MetadataMissingError`; a
        database it cannot read: :class:`BackendUnavailableError`.
        ``encoder``: the image encoder the index must have been built with (default: the configured one, built
        and not loaded)."""
        if settings.database_url or settings.vector_index.backend == "milvus":
            return None
        folder = Path(settings.resolved_index_dir)
        sidecar = opening.read_sidecar(folder, create=False)
        assert sidecar is not None  # create=False: a folder without one raised
        opening.check_encoder(folder, sidecar, encoder or build_image_encoder(settings))
        opening.is_stale(folder, sidecar, image_space, rebuild_if_stale=False)
        rows = ReadOnlyRows.open(folder / DB_NAME)
        if rows is None:
            # Refused here as ImageIndex.open refuses it (checked only now: the usual open pays nothing for it).
            opening.check_metadata(folder, sidecar, settings.database_url)
            return None
        try:
            vectors = load_vectors(folder, sidecar, settings.vector_index)
            vector_ids = vectors.ids() if vectors is not None else np.zeros(0, dtype=np.int64)
            # ImageIndex.open's reconciliation has nothing to do only when both sides hold the same ids (both sorted)
            # and the sidecar counts them; anything else is a writer's unfinished state, which it repairs or serves.
            if not np.array_equal(rows.ids(), vector_ids) or sidecar.count != len(vector_ids):
                rows.close()
                return None
        except BaseException:
            rows.close()
            raise
        return cls(folder, sidecar, vectors, rows)

    @property
    def dim(self) -> int | None:
        return self.sidecar.dim

    def __len__(self) -> int:
        return len(self.vectors) if self.vectors is not None else 0

    def search(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """Best ``k`` hits per query row, best first (``ImageIndex.search`` without an offset or a filter)."""
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if self.dim is not None and queries.shape[1] != self.dim:
            raise ValueError(f"query vectors have {queries.shape[1]} dimensions; the index stores {self.dim}")
        if self.vectors is None or k <= 0:
            return [[] for _ in range(len(queries))]
        return [[Hit(i, s) for i, s in zip(r.ids, r.scores, strict=True)][:k] for r in self.vectors.search(queries, k)]

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> ReadOnlyIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
