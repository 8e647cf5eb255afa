"""Opening a photo's file without ever blocking on it: only regular files are read.

``open()`` of a FIFO waits until a writer opens the other end, and one of a device may never return: a photo
replaced by a FIFO at an indexed path once held every thread of the service's pool (``GET /images/{id}`` blocked
in ``os.open``) until someone wrote to it. The file is opened with ``O_NONBLOCK`` (which returns at once for a FIFO
and is ignored by regular files) and refused unless ``fstat`` says it is a regular file. The CLI reads every
file a user names (photos, manifests, caption and word lists, id lists) through these functions: ``polyglot tag``
on a FIFO once waited for a writer until it was killed.
"""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path
from typing import BinaryIO, TextIO


class NotRegularFileError(OSError):
    """The path is a FIFO, a device, a socket or a folder: nothing the indexer or the service reads."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(errno.EINVAL, "not a regular file (a FIFO, device or socket)", str(path))


def open_regular(path: Path | str, *, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary, or :class:`NotRegularFileError` (an ``OSError``) at once when it is
    not a regular file. ``follow_links=False``: a symbolic link is refused too (``O_NOFOLLOW``, ``ELOOP``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def open_regular_text(path: Path | str, *, encoding: str = "utf-8") -> TextIO:
    """:func:`open_regular` as text (universal newlines, as ``open(path, encoding=...)``)."""
    return io.TextIOWrapper(open_regular(path), encoding=encoding)


def read_regular_bytes(path: Path | str) -> bytes:
    """The bytes of a regular file (``Path.read_bytes`` that never waits on a FIFO or device)."""
    with open_regular(path) as handle:
        return handle.read()


def read_regular_text(path: Path | str, *, encoding: str = "utf-8") -> str:
    """The text of a regular file (``Path.read_text`` that never waits on a FIFO or device)."""
    with open_regular_text(path, encoding=encoding) as handle:
        return handle.read()
