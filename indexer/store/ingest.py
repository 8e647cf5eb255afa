"""Per-image facts gathered before indexing (bytes, content hash, upright size, user metadata), and the report of
what an add did."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from PIL import Image

from indexer.file_stamps import Stamp
from indexer.images import ImageDecodeError, content_hash, register_formats
from indexer.metadata_limits import check_metadata, metadata_problem
from indexer.photo_metadata import PhotoFacts, photo_facts
from indexer.raw_preview import raw_preview
from indexer.regular_files import open_regular
from indexer.store.metadata import NewImage

# EXIF orientations 5-8 rotate by 90°: the upright image has width and height swapped.
_TRANSPOSED = {5, 6, 7, 8}
_FORMAT_SUFFIX = {
    "JPEG": ".jpg",
    "PNG": ".png",
    "WEBP": ".webp",
    "GIF": ".gif",
    "BMP": ".bmp",
    "TIFF": ".tif",
    "HEIF": ".heic",
    "AVIF": ".avif",
}
UNKNOWN_SUFFIX = ".img"  # any other format Pillow decodes: a name no browser or server maps to active content


@dataclass
class AddReport:
    """What adding photos (or rebuilding the vectors) did: ``polyglot index add`` and ``rebuild`` print it."""

    added: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    moved_ids: list[int] = field(default_factory=list)  # photos found under a new path, same id (issue 36)

    @property
    def moved(self) -> int:
        return len(self.moved_ids)


@dataclass
class Item:
    path: Path
    data: bytes
    sha256: str
    replaces: int | None = None  # id of the record this file had before its content changed
    meta: dict[str, Any] = field(default_factory=dict)
    size: tuple[int, int] | None = None  # upright (width, height), filled once known
    facts: PhotoFacts | None = None  # EXIF facts, read from the header when the file is read

    def to_new_image(self) -> NewImage:
        if self.size is None:
            raise ValueError(f"size of {self.path} unknown")
        facts = self.facts or photo_facts(self.data)
        return NewImage(
            path=str(self.path),
            sha256=self.sha256,
            width=self.size[0],
            height=self.size[1],
            bytes=len(self.data),
            **user_fields(self.meta),
            **fact_columns(self.path, facts),
        )


def fact_columns(path: Path, facts: PhotoFacts) -> dict[str, Any]:
    """The photo-fact columns of a row: the EXIF facts, the file's folder and modification time."""
    return {**facts.columns(), "folder": str(path.parent), "file_modified_at": file_time(path)}


def file_time(path: Path) -> datetime | None:
    """The file's modification time as a naive local time (what the library orders undated photos by); None when
    the file cannot be stat'ed any more (it was read a moment ago: a race with a deletion)."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime).replace(microsecond=0)
    except (OSError, ValueError, OverflowError):
        return None


@dataclass
class FileBatch:
    """Files read for indexing: new or changed ones to ingest, unchanged ones (skipped, but metadata given for
    them is still applied as ``(id, fields)`` updates) and unreadable ones (``(path, reason)``)."""

    items: list[Item] = field(default_factory=list)
    updates: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    facts: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # unchanged rows that lacked them
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    # What the folder watcher needs not to read a file again (indexer/file_stamps.py): each file's size and
    # modification time, taken before it was read, and the content hash of the unchanged ones.
    stamps: dict[str, Stamp] = field(default_factory=dict)
    unchanged: list[tuple[str, str]] = field(default_factory=list)  # (path, sha256)


def read_files(
    paths: Sequence[Path],
    existing: Mapping[str, tuple[int, str]],
    meta: Mapping[Path, dict[str, Any]],
    max_bytes: int | None = None,
    refresh: frozenset[int] | set[int] = frozenset(),
) -> FileBatch:
    """Read and hash ``paths``; ``existing`` maps indexed paths to ``(id, sha256)``, ``meta`` paths to metadata;
    ``refresh``: ids of unchanged rows whose photo facts are to be read now (rows from before the migration).
    Files over ``max_bytes`` (``POLYGLOT_MAX_FILE_BYTES``) are refused from their size, before a byte is read."""
    batch = FileBatch()
    for path in paths:
        problem = metadata_problem(meta.get(path))
        if problem is not None:  # never stored: every answer holding the photo would fail on it
            batch.failed.append((str(path), problem))
            continue
        try:
            stamp = Stamp.of(os.stat(path))  # before reading: a file written meanwhile no longer matches it
            data = read_bounded(path, max_bytes)
        except FileTooLargeError as exc:
            batch.failed.append((str(path), str(exc)))
            continue
        except OSError as exc:
            batch.failed.append((str(path), f"cannot read: {exc.strerror or exc}"))
            continue
        sha = content_hash(data)
        batch.stamps[str(path)] = stamp
        old = existing.get(str(path))
        if old is not None and old[1] == sha:
            batch.skipped += 1
            batch.unchanged.append((str(path), sha))
            if old[0] in refresh:
                batch.facts.append((old[0], fact_columns(path, photo_facts(data))))
            if path in meta:
                batch.updates.append((old[0], user_fields(meta[path])))
            continue
        batch.items.append(Item(path, data, sha, old[0] if old else None, dict(meta.get(path) or {})))
    return batch


class FileTooLargeError(ValueError):
    """A file over ``POLYGLOT_MAX_FILE_BYTES``: refused from its size, never read."""


def read_bounded(path: Path, max_bytes: int | None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (checked on the open descriptor before reading, and
    again while reading: a file that grows meanwhile is refused too). A FIFO or device is refused at once
    (:func:`~indexer.regular_files.open_regular`), never waited on."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if max_bytes is not None and size > max_bytes:
            raise FileTooLargeError(
                f"file too large: {size:,} bytes, the limit is {max_bytes:,} (POLYGLOT_MAX_FILE_BYTES)"
            )
        # The size on record plus one byte: a read sized by the limit makes Python allocate (and then shrink) a
        # buffer of the whole limit for every file, ~0.5 ms of a 12-Mpx photo's ~33. A file that grew since the
        # fstat is read on, up to the limit.
        data = handle.read(size + 1)
        if len(data) > size:
            data += handle.read() if max_bytes is None else handle.read(max_bytes + 1 - len(data))
    if max_bytes is not None and len(data) > max_bytes:
        raise FileTooLargeError(f"file too large: over {max_bytes:,} bytes (POLYGLOT_MAX_FILE_BYTES)")
    return data


def user_fields(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The editable columns from a metadata dict: title, caption, tags; everything else into ``extra``.
    :class:`~indexer.metadata_limits.MetadataTooLongError` when one is over its bound."""
    check_metadata(meta)
    meta = dict(meta or {})
    extra = dict(meta.pop("extra", None) or {})
    fields: dict[str, Any] = {
        "title": meta.pop("title", None),
        "caption": meta.pop("caption", None),
        "tags": [str(t) for t in (meta.pop("tags", None) or [])],
    }
    extra.update(meta)
    fields["extra"] = extra
    return fields


def header_size(data: bytes) -> tuple[int, int]:
    """Upright size from the header only (no pixel decoding); for images whose features are cached."""
    register_formats()
    preview = raw_preview(data)
    try:
        with Image.open(io.BytesIO(preview[0] if preview else data)) as image:
            width, height = image.size
            orientation = image.getexif().get(0x0112) or (preview[1] if preview else None)
    except Exception as exc:  # Pillow raises many types for garbage; all mean "not an image"
        raise ImageDecodeError(f"not an image: {exc}") from exc
    return (height, width) if orientation in _TRANSPOSED else (width, height)


def upload_suffix(data: bytes) -> str:
    """File suffix for a stored upload: from the image's detected format only, never from the client's file name
    (an upload named ``evil.html`` must not be stored, nor served, as HTML)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt = image.format or ""
    except Exception:
        fmt = ""
    return _FORMAT_SUFFIX.get(fmt, UNKNOWN_SUFFIX)
