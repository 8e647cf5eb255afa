"""The full vectors of a large index on disk: append-only rows, memory-mapped for re-ranking, never loaded.

One generation folder holds::

    rows.f32 | rows.f16   n_rows x dim floats, row r = the r-th vector ever added (float16 halves the disk)
    rows.ids              n_rows int64: the id (SQL primary key) of each row
    deleted.rows          int64 row numbers deleted since the folder was written (tombstones)

Rows are only ever appended (vectors first, then their ids, each fsync'ed), so a crash leaves at most a tail
of one file longer than the other: the valid rows are the shorter of the two, and the next writer cuts the
tail off. A delete appends row numbers to ``deleted.rows``; the rows themselves are reclaimed when the index
is rebuilt into a new generation. Readers in other processes see a consistent prefix at any time.

In RAM: the ids (8 B/row), a live flag (1 B/row) and, built lazily, the live ids sorted with their rows for
id -> row look-ups (16 B/live row). The vectors stay in the page cache, shared and reclaimable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

IDS_NAME = "rows.ids"
DELETED_NAME = "deleted.rows"
DTYPES = {"float32": "rows.f32", "float16": "rows.f16"}


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _read_int64(path: Path) -> np.ndarray:
    if not path.exists():
        return np.zeros(0, dtype=np.int64)
    raw = path.read_bytes()
    return np.frombuffer(raw[: len(raw) // 8 * 8], dtype=np.int64).copy()  # a torn last entry is ignored


class RowFile:
    """Append-only float rows + ids + tombstones of one generation folder (not thread-safe by itself)."""

    def __init__(self, folder: Path, dim: int, dtype: str) -> None:
        if dtype not in DTYPES:
            raise ValueError(f"unknown vector file type {dtype!r}; choose one of {', '.join(DTYPES)}")
        self.folder = Path(folder)
        self.dim = dim
        self.dtype = dtype
        self.vector_path = self.folder / DTYPES[dtype]
        self.row_bytes = dim * np.dtype(dtype).itemsize
        self.row_ids = np.zeros(0, dtype=np.int64)
        self.live = np.zeros(0, dtype=bool)
        self._deleted_seen = 0
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None
        self.vectors = self._map(0)
        self.reload()

    @classmethod
    def create(cls, folder: Path, dim: int, dtype: str) -> RowFile:
        """Empty files in a new folder (a new generation)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=False)
        for name in (DTYPES[dtype], IDS_NAME, DELETED_NAME):
            (folder / name).touch()
        return cls(folder, dim, dtype)

    def reload(self) -> np.ndarray:
        """Read what was appended since we last looked (by another process); returns the rows newly deleted.

        The valid rows are those with both a vector and an id: a crashed append leaves a tail that is ignored
        here and cut by the next :meth:`append`.
        """
        vector_rows = self.vector_path.stat().st_size // self.row_bytes if self.vector_path.exists() else 0
        ids_path = self.folder / IDS_NAME
        id_rows = ids_path.stat().st_size // 8 if ids_path.exists() else 0
        n_rows = min(vector_rows, id_rows)
        if n_rows > self.n_rows:
            with ids_path.open("rb") as handle:
                handle.seek(self.n_rows * 8)
                fresh = np.frombuffer(handle.read((n_rows - self.n_rows) * 8), dtype=np.int64)
            self.row_ids = np.concatenate([self.row_ids, fresh])
            self.live = np.concatenate([self.live, np.ones(len(fresh), dtype=bool)])
            self._sorted = None
            self.vectors = self._map(n_rows)
        dead = _read_int64(self.folder / DELETED_NAME)[self._deleted_seen :]
        self._deleted_seen += len(dead)
        dead = dead[(dead >= 0) & (dead < self.n_rows)]
        dead = np.unique(dead[self.live[dead]])
        if len(dead):
            self.live[dead] = False
            self._sorted = None
        return dead

    def _map(self, n_rows: int) -> np.ndarray:
        if n_rows == 0:
            return np.zeros((0, self.dim), dtype=self.dtype)
        return np.memmap(self.vector_path, dtype=self.dtype, mode="r", shape=(n_rows, self.dim))

    # ------------------------------------------------------------------ reading
    @property
    def n_rows(self) -> int:
        return len(self.row_ids)

    def resident_bytes(self) -> int:
        looked_up = sum(part.nbytes for part in self._sorted) if self._sorted is not None else 0
        return int(self.row_ids.nbytes + self.live.nbytes + looked_up)

    def live_count(self) -> int:
        return int(self.live.sum())

    def live_ids(self) -> np.ndarray:
        return self._index()[0].copy()

    def _index(self) -> tuple[np.ndarray, np.ndarray]:
        """Live ids sorted, with their rows (ids are unique among live rows)."""
        if self._sorted is None:
            rows = np.flatnonzero(self.live)
            ids = self.row_ids[rows]
            order = np.argsort(ids, kind="stable")
            self._sorted = (ids[order], rows[order])
        return self._sorted

    def rows_of(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The live row of each id, -1 where the id is not stored."""
        wanted = np.asarray(ids, dtype=np.int64).reshape(-1)
        sorted_ids, rows = self._index()
        if len(sorted_ids) == 0:
            return np.full(len(wanted), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(sorted_ids, wanted), len(sorted_ids) - 1)
        return np.where(sorted_ids[at] == wanted, rows[at], -1).astype(np.int64)

    def read(self, rows: np.ndarray) -> np.ndarray:
        """float32 vectors of ``rows`` (read in ascending order: fewer page faults, sequential when close)."""
        order = np.argsort(rows)
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        out[order] = self.vectors[rows[order]]
        return out

    # ------------------------------------------------------------------ writing (the caller holds the write lock)
    def append(self, ids: np.ndarray, matrix: np.ndarray, *, sync: bool = True) -> np.ndarray:
        """Append rows; returns their row numbers. ``sync=False`` (bulk builds) leaves fsync to :meth:`sync`."""
        first = self.n_rows
        for path, size in ((self.vector_path, first * self.row_bytes), (self.folder / IDS_NAME, first * 8)):
            if path.stat().st_size != size:  # a torn tail from a crashed append: cut it before writing after it
                with path.open("r+b") as handle:
                    handle.truncate(size)
        data = np.ascontiguousarray(matrix, dtype=self.dtype).tobytes()
        if sync:
            _append(self.vector_path, data)
            _append(self.folder / IDS_NAME, np.asarray(ids, dtype=np.int64).tobytes())
        else:
            with self.vector_path.open("ab") as handle:
                handle.write(data)
            with (self.folder / IDS_NAME).open("ab") as handle:
                handle.write(np.asarray(ids, dtype=np.int64).tobytes())
        new_ids = np.asarray(ids, dtype=np.int64)
        if self._sorted is not None and len(new_ids):
            sorted_ids, rows = self._sorted
            if (len(sorted_ids) == 0 or new_ids.min() > sorted_ids[-1]) and np.all(np.diff(new_ids) > 0):
                # The usual case (SQL ids grow): extend the look-up instead of sorting a million ids again.
                self._sorted = (np.concatenate([sorted_ids, new_ids]), np.concatenate([rows, first + np.arange(len(new_ids))]))
            else:
                self._sorted = None
        self.row_ids = np.concatenate([self.row_ids, new_ids])
        self.live = np.concatenate([self.live, np.ones(len(new_ids), dtype=bool)])
        self.vectors = self._map(self.n_rows)
        return first + np.arange(len(new_ids), dtype=np.int64)

    def delete(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) == 0:
            return
        deleted = self.folder / DELETED_NAME
        if deleted.stat().st_size % 8:  # a torn entry from a crashed delete: keep the entries aligned
            with deleted.open("r+b") as handle:
                handle.truncate(deleted.stat().st_size // 8 * 8)
        _append(deleted, rows.tobytes())
        self._deleted_seen += len(rows)
        self.live[rows] = False
        if self._sorted is not None:
            sorted_ids, sorted_rows = self._sorted
            keep = ~np.isin(sorted_rows, rows)
            self._sorted = (sorted_ids[keep], sorted_rows[keep])

    def sync(self) -> None:
        for path in (self.vector_path, self.folder / IDS_NAME):
            with path.open("ab") as handle:
                os.fsync(handle.fileno())
