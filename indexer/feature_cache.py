"""Features cache keyed by (encoder name, content hash): the same photo or text is never encoded twice.

One SQLite file per encoder under ``CACHE_DIR/features/``; vectors stored as float32 blobs. SQLite gives
atomic, concurrent-reader-safe writes for free, which is why it is used instead of loose .npy files. A cache
folder with no space left is a :class:`~indexer.store.failures.DiskFullError` naming that folder (opening the
file, or writing to it): SQLite says "disk I/O error" when it cannot even create its write-ahead log.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from indexer.store.failures import translated


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "encoder"


class FeatureCache:
    def __init__(self, cache_dir: Path, encoder_name: str, dim: int) -> None:
        self.path = Path(cache_dir) / "features" / f"{_safe(encoder_name)}.sqlite"
        self.encoder_name = encoder_name
        self.dim = dim
        self._lock = threading.Lock()
        with translated(self.path.parent, what="features cache"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS features (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            except BaseException:
                self._db.close()
                raise

    def close(self) -> None:
        self._db.close()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM features").fetchone()[0])

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            for start in range(0, len(unique), 900):  # SQLite's bound-parameter limit
                chunk = unique[start : start + 900]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vector FROM features WHERE key IN ({marks})", chunk):
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape[0] == self.dim:
                        found[key] = vector
        return found

    def put_many(self, items: Mapping[str, np.ndarray]) -> None:
        rows = [(key, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for key, vec in items.items()]
        with self._lock, translated(self.path.parent, sum(len(blob) for _, blob in rows), "features cache"):
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO features (key, vector) VALUES (?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                # SQLite rolls a transaction back by itself after some errors (SQLITE_FULL at commit: a full disk);
                # a second ROLLBACK then fails ("no transaction is active") and hides the disk-full error.
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise

    def compute(
        self,
        keys: Sequence[str],
        encode: Callable[[list[int]], np.ndarray],
        batch_size: int = 256,
        progress: Callable[[int], object] | None = None,
    ) -> np.ndarray:
        """Vectors for ``keys`` in order; missing ones come from ``encode(positions)`` in batches, then cached.

        ``encode`` receives positions into ``keys`` (so callers map them to images or texts) and must return
        one row per position. ``progress(n)`` is called with the number of rows finished, cached ones included.
        """
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        cached = self.get_many(keys)
        missing: dict[str, list[int]] = {}
        for position, key in enumerate(keys):
            if key in cached:
                out[position] = cached[key]
            else:
                missing.setdefault(key, []).append(position)
        if progress is not None:
            progress(len(keys) - sum(len(p) for p in missing.values()))
        todo = list(missing.items())
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            vectors = encode([positions[0] for _, positions in chunk])
            self.put_many({key: vectors[i] for i, (key, _) in enumerate(chunk)})
            for i, (_, positions) in enumerate(chunk):
                out[positions] = vectors[i]
            if progress is not None:
                progress(sum(len(positions) for _, positions in chunk))
        return out
