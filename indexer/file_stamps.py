"""What the folder watcher last saw of each file it indexed: size and modification time, with the content hash.

A watcher that starts (``polyglot index watch``, ``serve --watch``) must catch up with what changed while it was
stopped. Reading and hashing every photo for that costs minutes on a large library; instead, a file whose size
and modification time (nanoseconds) are those recorded here, and whose row in the index still has the recorded
content hash, is taken as unchanged and not read at all — what rclip and immich do. Only new and changed files
are read and hashed (:meth:`indexer.watch.FolderWatcher.sync`).

Kept next to the index it describes (``watch-stamps.sqlite`` in the index folder: deleting the index deletes
them) and written only after the index has committed the files, from a ``stat`` taken *before* the file was
read: a file written again in between no longer matches its stamp, and is read at the next start. A stamp is a
hint, never the truth: a stamp that matches a row whose hash differs, or no row, means "read the file".
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

STAMPS_NAME = "watch-stamps.sqlite"
_CHUNK = 900  # SQLite's bound-parameter limit


@dataclass(frozen=True)
class Stamp:
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, stat: os.stat_result) -> Stamp:
        return cls(stat.st_size, stat.st_mtime_ns)


class FileStamps:
    """``path → (Stamp, sha256)`` in a small SQLite file; safe to share between threads."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / STAMPS_NAME
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # a lost stamp only means one more read
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS stamps (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
            "mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL)"
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_many(self, paths: Sequence[str]) -> dict[str, tuple[Stamp, str]]:
        found: dict[str, tuple[Stamp, str]] = {}
        unique = list(dict.fromkeys(paths))
        with self._lock:
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                query = f"SELECT path, size, mtime_ns, sha256 FROM stamps WHERE path IN ({marks})"
                for path, size, mtime_ns, sha in self._db.execute(query, chunk):
                    found[path] = (Stamp(size, mtime_ns), sha)
        return found

    def put_many(self, stamps: Mapping[str, tuple[Stamp, str]]) -> None:
        rows = [(path, stamp.size, stamp.mtime_ns, sha) for path, (stamp, sha) in stamps.items()]
        self._write("INSERT OR REPLACE INTO stamps (path, size, mtime_ns, sha256) VALUES (?, ?, ?, ?)", rows)

    def forget(self, paths: Iterable[str]) -> None:
        self._write("DELETE FROM stamps WHERE path = ?", [(path,) for path in paths])

    def forget_under(self, folder: str) -> None:
        """Every stamp of a file in ``folder`` or below (a folder deleted or moved away)."""
        below = folder.rstrip("/") + "/"
        with self._lock:
            self._db.execute("DELETE FROM stamps WHERE path >= ? AND path < ?", (below, below[:-1] + "0"))

    def _write(self, statement: str, rows: Sequence[tuple[object, ...]]) -> None:
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(statement, rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
