"""What can fail around an index that is not the user's input: the disk, the database, the vector server.

Each failure is turned into one exception type that says, in one line, what happened and what to do:

* :class:`DiskFullError` (an ``OSError`` with ``errno.ENOSPC``): a write found no space. The message names the
  folder, the bytes the write needed (when known) and what is free. The index keeps its last good state on
  disk (writes are atomic) and opens read-only from it (:meth:`indexer.image_index.ImageIndex.open`).
* :class:`BackendUnavailableError`: the metadata database or the vector server cannot be reached or answered
  with an error. The service answers 503 with ``Retry-After``; the CLI prints the line and exits with 2.

:func:`translated` maps the low-level exceptions (``OSError`` ENOSPC, SQLAlchemy's ``OperationalError`` and
``InterfaceError``, SQLite's "database or disk is full") to these two, so every layer above sees the same types.
"""

from __future__ import annotations

import errno
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class DiskFullError(OSError):
    """No space left for a write; ``folder`` and ``needed`` (bytes, 0 when unknown) say where and how much."""

    def __init__(self, folder: Path, needed: int = 0, what: str = "index") -> None:
        self.folder = Path(folder)
        self.needed = needed
        self.what = what
        self.free = free_bytes(self.folder)
        message = (
            f"no space left on the device of {self.folder}: {self.shortfall()}; free some space and run the "
            "command again (the index stays readable at its last good state meanwhile)"
        )
        super().__init__(errno.ENOSPC, message)

    def shortfall(self) -> str:
        """What was written and the space it lacked, in words that never contradict the free space measured: a
        write can fail with more free than its own size (SQLite's journal, the file system's blocks)."""
        if self.needed and self.needed > self.free:
            return f"writing the {self.what} needs {human_bytes(self.needed)}, {human_bytes(self.free)} free"
        return f"writing the {self.what} needs more than the {human_bytes(self.free)} free"

    def public_detail(self, place: str) -> str:
        """The message for an HTTP client: ``place`` names the kind of folder (``the cache folder
        (POLYGLOT_CACHE_DIR)``), never its path on the server (the log has it)."""
        return f"no space left in {place}: {self.shortfall()}; free some space there and retry"

    def __str__(self) -> str:
        return str(self.strerror)


class BackendUnavailableError(RuntimeError):
    """A backend the index needs (``database`` or ``vectors``) cannot be used right now; retrying later may work."""

    def __init__(self, backend: str, detail: str) -> None:
        self.backend = backend
        self.detail = detail
        super().__init__(f"the {backend} backend is unavailable: {detail}")


def free_bytes(folder: Path) -> int:
    """Bytes available on the file system of ``folder`` (or its nearest existing parent)."""
    path = Path(folder)
    while not path.exists() and path != path.parent:
        path = path.parent
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return 0


def human_bytes(count: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} bytes"


def is_disk_full(exc: BaseException) -> bool:
    """ENOSPC from the OS, or SQLite's way of saying it ("database or disk is full")."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(getattr(exc, "orig", None) or exc).lower()
    return "database or disk is full" in text or "no space left on device" in text


LOW_SPACE_BYTES = 1 << 20  # below this, SQLite's "disk I/O error" (it could not create a file) means no space


def is_io_error(exc: BaseException) -> bool:
    return "disk i/o error" in str(getattr(exc, "orig", None) or exc).lower()


def _is_sql_outage(exc: BaseException) -> bool:
    try:
        from sqlalchemy import exc as sa_exc
    except ImportError:  # pragma: no cover - sqlalchemy is a dependency
        return False
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return True
    return isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError)


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The exception's message on one line, without SQLAlchemy's statement and background link."""
    text = str(getattr(exc, "orig", None) or exc).strip() or type(exc).__name__
    line = " ".join(text.split("\n")[0].split())
    return line if len(line) <= limit else line[:limit] + "…"


@contextmanager
def translated(folder: Path, needed: int = 0, what: str = "index") -> Iterator[None]:
    """Re-raise disk-full and database-outage errors of the block as :class:`DiskFullError` /
    :class:`BackendUnavailableError` (already translated ones pass through)."""
    try:
        yield
    except (DiskFullError, BackendUnavailableError):
        raise
    except Exception as exc:
        if is_disk_full(exc) or (is_io_error(exc) and free_bytes(folder) < LOW_SPACE_BYTES):
            raise DiskFullError(folder, needed, what) from exc
        if _is_sql_outage(exc):
            raise BackendUnavailableError("database", first_line(exc)) from exc
        raise
