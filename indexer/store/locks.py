"""Locks of an index: readers share, one writer at a time (per process), one writing process at a time."""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK_NAME = ".write.lock"  # in the index folder: held (flock) by the one process writing to it


class IndexBusyError(RuntimeError):
    """Another process is writing to the same index folder."""


class ReadWriteLock:
    """Many concurrent readers (searches) or one writer (the short moment a FAISS index is changed/swapped).

    Writers are preferred, so a steady stream of searches cannot starve an admin's add or remove.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting_writers = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting_writers:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting_writers += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._waiting_writers -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


@contextmanager
def process_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``; released by the kernel even if the process is killed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise IndexBusyError(
                f"another process is writing to the index in {path.parent}; wait for it to finish and retry"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
