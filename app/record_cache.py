"""The API view of image metadata for result pages, kept in memory for a short while.

Result pages show the same images again and again, and reading a row and validating its view costs more than the
vector search (measured: ~0.8 ms for a page of 20 before this cache). Entries live ``ttl`` seconds (metadata
edited by another process shows up after that) and are dropped at once when this service removes the image.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from sqlalchemy import select

from app.library_folders import LibraryFolders
from app.schemas.images import ImageMetadata
from indexer.store.metadata import ImageRecord, ImageRow, MetadataStore

MAX_ENTRIES = 100_000  # bounded memory: the whole cache is dropped past this many images


class RecordCache:
    def __init__(self, store: MetadataStore, ttl: float, folders: LibraryFolders | None = None) -> None:
        self.store = store
        self.ttl = ttl
        self.folders = folders or LibraryFolders([], store.folder_values)
        self._entries: dict[int, tuple[float, ImageMetadata]] = {}
        self._lock = threading.Lock()

    def get_many(self, ids: Sequence[int]) -> dict[int, ImageMetadata]:
        """Views of many images: recently built ones from memory, the rest from one SQL query (blocking)."""
        now = time.monotonic()
        found: dict[int, ImageMetadata] = {}
        with self._lock:
            for i in ids:
                entry = self._entries.get(int(i))
                if entry is not None and entry[0] > now:
                    found[int(i)] = entry[1]
        missing = [int(i) for i in ids if int(i) not in found]
        if missing:
            with self.store.transaction() as session:
                rows = session.scalars(select(ImageRow).where(ImageRow.id.in_(missing)))
                fresh = {
                    int(row.id): ImageMetadata.from_record(ImageRecord.from_row(row), self.folders.shown)
                    for row in rows
                }
            found.update(fresh)
            if self.ttl > 0:
                with self._lock:
                    if len(self._entries) > MAX_ENTRIES:
                        self._entries.clear()
                    self._entries.update({i: (now + self.ttl, view) for i, view in fresh.items()})
        return found

    def forget(self, ids: Sequence[int]) -> None:
        with self._lock:
            for i in ids:
                self._entries.pop(int(i), None)
