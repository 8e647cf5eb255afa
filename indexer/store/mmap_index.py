"""``ivf-pq-mmap``: compressed codes in RAM, exact re-ranking on memory-mapped full vectors (large collections).

In RAM: an ``IndexIVFPQFastScan`` over the row numbers of a :class:`~indexer.store.row_file.RowFile` (4-bit
product codes, ``dim / pq_dims`` sub-quantizers: 160 B per 1280-d vector, + 8 B list id) and the row file's ids
and live flags. A query scans ``nprobe`` of ``nlist`` lists with SIMD, keeps ``rerank``·k candidates and ranks
them by exact inner products with their full vectors read from the memory-mapped row file: the scores returned
are the exact cosines (float32 rows) and the RAM per photo stays ~0.2 KB. Why these choices, measured at 10k to
1M photos: ``benchmarks/index_scale.md``.

A generation folder (``state.json`` names its codes file)::

    rows.f32|rows.f16, rows.ids, deleted.rows   the row file (append-only, see row_file.py)
    codes-<rows>.faiss                          snapshot of the codes for rows [0, codes_rows)
    state.json                                  dim, dtype, codes file, codes_rows (atomic)

Adds append rows (fsync) and encode them in RAM; deletes append tombstones and drop the codes: both cost
milliseconds at a million photos. Opening reads the snapshot and encodes the rows appended since; ``commit``
rewrites the snapshot once that tail is long (``snapshot_rows``), so opening stays fast. Rows of deleted photos
are reclaimed by a rebuild, which writes a whole new generation folder (see vector_files.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from indexer.atomic import atomic_write_json
from indexer.store.backend import SearchResult
from indexer.store.filtered import filtered_search
from indexer.store.index_kinds import MMAP_KIND, VectorIndexSettings
from indexer.store.row_file import RowFile
from indexer.store.vectors import _as_ids, _as_matrix, checked_additions, read_faiss, write_faiss

STATE_NAME = "state.json"
GENERATIONS_DIR = MMAP_KIND  # <index folder>/ivf-pq-mmap/g<time>/: one folder per generation
ENCODE_CHUNK = 65_536  # rows encoded per FAISS call while building: bounded memory (320 MB at 1280-d)


def ivf_lists(n: int, settings: VectorIndexSettings) -> int:
    """IVF lists for ``n`` vectors: 2·sqrt(n) (1M: 2,000), never fewer than 39 training points per list."""
    nlist = settings.mmap_nlist or round(2 * math.sqrt(max(n, 1)))
    return max(1, min(nlist, n // 39 or 1))


def pq_codes(dim: int, settings: VectorIndexSettings) -> int:
    """Sub-quantizers: one per ``pq_dims`` dimensions, even (fast-scan packs two 4-bit codes per byte)."""
    m = max(2, dim // settings.mmap_pq_dims)
    while dim % m or m % 2:
        m -= 1
    return max(m, 1)


class MmapIvfIndex:
    """Codes in RAM + full vectors on disk; not thread-safe by itself (the collection holds the lock)."""

    kind = MMAP_KIND

    def __init__(self, folder: Path, rows: RowFile, codes: Any, codes_rows: int, settings: VectorIndexSettings):
        self.folder = Path(folder)
        self.rows = rows
        self.codes = codes
        self.codes_rows = codes_rows
        self.settings = settings
        self._count = rows.live_count()
        self._configure()

    def _configure(self) -> None:
        nlist = int(self.codes.nlist)
        self.codes.nprobe = min(nlist, self.settings.mmap_nprobe or max(1, round(nlist / 4)))

    # ------------------------------------------------------------------ construction
    @classmethod
    def train(cls, folder: Path, rows: RowFile, settings: VectorIndexSettings) -> MmapIvfIndex:
        """Train the quantiser on a sample of the rows, encode them all (in chunks), write the snapshot."""
        live = np.flatnonzero(rows.live)
        if len(live) == 0:
            raise ValueError("an ivf-pq-mmap index needs at least one vector to train on")
        nlist = ivf_lists(len(live), settings)
        dim = rows.dim
        codes = faiss.index_factory(dim, f"IVF{nlist},PQ{pq_codes(dim, settings)}x4fs", faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.extract_index_ivf(codes)
        # k-means needs ~40 points per list; more only costs time (a million 1280-d points: minutes per pass).
        ivf.cp.niter = settings.mmap_train_iterations
        size = min(len(live), max(settings.mmap_train_per_list * nlist, 4096))
        sample = np.sort(np.random.default_rng(0).choice(live, size, replace=False))
        codes.train(rows.read(sample))
        for start in range(0, len(live), ENCODE_CHUNK):
            chunk = live[start : start + ENCODE_CHUNK]
            codes.add_with_ids(rows.read(chunk), chunk)
        index = cls(folder, rows, codes, rows.n_rows, settings)
        index.snapshot()
        return index

    @classmethod
    def open(cls, folder: Path, settings: VectorIndexSettings) -> MmapIvfIndex:
        folder = Path(folder)
        state = json.loads((folder / STATE_NAME).read_text(encoding="utf-8"))
        rows = RowFile(folder, int(state["dim"]), str(state["dtype"]))
        codes = read_faiss(folder / state["codes"])
        index = cls(folder, rows, codes, int(state["codes_rows"]), settings)
        index._encode_tail(index.codes_rows)
        dead = np.flatnonzero(~rows.live[: index.codes_rows])
        if len(dead):  # deleted after the snapshot (deleting an id the codes no longer hold is a no-op)
            codes.remove_ids(faiss.IDSelectorBatch(dead))
        return index

    def _encode_tail(self, first: int) -> None:
        """Encode the live rows from ``first`` on (appended after the snapshot, by us or by another process)."""
        tail = first + np.flatnonzero(self.rows.live[first:])
        for start in range(0, len(tail), ENCODE_CHUNK):
            chunk = tail[start : start + ENCODE_CHUNK]
            self.codes.add_with_ids(self.rows.read(chunk), chunk)

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        return self.rows.dim

    @property
    def files_entry(self) -> str:
        """``ivf-pq-mmap/g<time>``: the generation folder, relative to the index folder."""
        return f"{GENERATIONS_DIR}/{self.folder.name}"

    def __len__(self) -> int:
        return self._count

    def ids(self) -> np.ndarray:
        return self.rows.live_ids()

    def resident_bytes(self) -> int:
        """RAM held by this index: codes + list ids + the row file's ids, flags and look-up (not the page cache)."""
        invlists = self.codes.invlists
        code_bytes = sum(invlists.list_size(i) for i in range(invlists.nlist)) * (self.codes.code_size + 8)
        return int(code_bytes + self.rows.resident_bytes() + self.codes.nlist * self.dim * 4)

    # ------------------------------------------------------------------ mutation (under the collection's write lock)
    def catch_up(self) -> None:
        """Take in rows and deletes another process appended to this generation since we read it."""
        first = self.rows.n_rows
        newly_dead = self.rows.reload()
        if len(newly_dead):
            self.codes.remove_ids(faiss.IDSelectorBatch(newly_dead))
        self._encode_tail(first)
        self._count = self.rows.live_count()

    def add(self, ids: Sequence[int] | np.ndarray, vectors: np.ndarray) -> None:
        id_array, matrix = checked_additions(ids, vectors, self.dim, lambda given: self.rows.rows_of(given) >= 0)
        if len(id_array) == 0:
            return
        new_rows = self.rows.append(id_array, matrix)  # durable first: the codes can always be re-derived
        self.codes.add_with_ids(matrix, new_rows)
        self._count += len(id_array)

    def remove(self, ids: Sequence[int] | np.ndarray) -> int:
        """Remove the given ids (unknown ones are ignored); returns how many were removed."""
        found = self.rows.rows_of(_as_ids(ids))
        doomed = np.unique(found[found >= 0])
        if len(doomed) == 0:
            return 0
        self.codes.remove_ids(faiss.IDSelectorBatch(doomed))
        self.rows.delete(doomed)
        self._count -= len(doomed)
        return len(doomed)

    # ------------------------------------------------------------------ reading
    def search(self, vectors: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[SearchResult]:
        """Top ``k`` per query row by exact inner product among the codes' best ``rerank``·k candidates;
        ``allowed``: among those ids only (their memory-mapped rows scored exactly, or a deepened search)."""
        if allowed is not None:
            return filtered_search(self, vectors, k, allowed)
        matrix = _as_matrix(vectors, self.dim)
        if k <= 0 or self._count == 0:
            return [SearchResult([], []) for _ in range(len(matrix))]
        k = min(k, self._count)
        _, candidates = self.codes.search(matrix, min(self._count, k * self.settings.mmap_rerank))
        results = []
        for query, found in zip(matrix, candidates, strict=True):
            rows = found[found >= 0]
            scores = self.rows.read(rows) @ query
            top = np.argsort(-scores, kind="stable")[:k]
            results.append(SearchResult(self.rows.row_ids[rows[top]].tolist(), scores[top].tolist()))
        return results

    def reconstruct(self, id_: int) -> np.ndarray | None:
        row = self.rows.rows_of([int(id_)])
        return self.rows.read(row)[0] if row[0] >= 0 else None

    def reconstruct_many(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        rows = self.rows.rows_of(_as_ids(ids))
        if (rows < 0).any():
            raise KeyError(f"ids not stored: {_as_ids(ids)[rows < 0][:10].tolist()}")
        return self.rows.read(rows)

    def reconstruct_present(self, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, vectors)`` of the given ids this index holds, read from the memory-mapped rows."""
        id_array = _as_ids(ids)
        rows = self.rows.rows_of(id_array)
        keep = rows >= 0
        return id_array[keep], self.rows.read(rows[keep])

    # ------------------------------------------------------------------ persistence
    def commit(self) -> None:
        """Make the state durable: rows already are (appended and fsync'ed as they come); rewrite the codes
        snapshot once the unsnapshotted tail is long (opening encodes that tail: ~10k rows a second on 2 cores)."""
        if self.rows.n_rows - self.codes_rows > self.settings.mmap_snapshot_rows:
            self.snapshot()

    def ping(self) -> None:
        """Nothing: local files."""

    def drop_replaced(self) -> None:
        """Nothing: replaced generations are folders of the index (``vector_files.remove_unnamed``)."""

    def snapshot(self) -> None:
        """Write the codes of every row so far (atomically), point ``state.json`` at them, drop the old file."""
        state_path = self.folder / STATE_NAME
        old = json.loads(state_path.read_text(encoding="utf-8"))["codes"] if state_path.exists() else None
        name = f"codes-{self.rows.n_rows}.faiss"
        write_faiss(self.codes, self.folder / name)
        state = {"dim": self.dim, "dtype": self.rows.dtype, "codes": name, "codes_rows": self.rows.n_rows}
        atomic_write_json(state_path, state)
        self.codes_rows = self.rows.n_rows
        if old and old != name:
            (self.folder / old).unlink(missing_ok=True)

    def disk_bytes(self) -> int:
        return sum(path.stat().st_size for path in self.folder.iterdir() if path.is_file())
