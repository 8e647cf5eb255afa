"""Crash-safe file writes: write a temporary file in the same folder, fsync, rename over the target.

A reader (or a process that restarts after a crash) sees either the old file or the new one, never half.
A write that finds no space raises :class:`indexer.store.failures.DiskFullError` (folder, bytes needed, bytes
free) and leaves the old file as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from indexer.store.failures import DiskFullError, is_disk_full


def fsync_dir(folder: Path) -> None:
    """Persist a rename: the directory entry itself must reach the disk."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(target: Path) -> Iterator[BinaryIO]:
    """``with atomic_open(path) as f: f.write(...)``: the target appears only if the block finishes."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        # mkstemp makes 0600 files; keep the target's mode (or a plain 0644) so a service running as another
        # user can still read an index written by the CLI.
        os.fchmod(fd, target.stat().st_mode & 0o777 if target.exists() else 0o644)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc) and not isinstance(exc, DiskFullError):
            # One line with the folder and what is free, not an errno traceback (the target is untouched).
            raise DiskFullError(target.parent, what=target.name) from exc
        raise


def atomic_write_bytes(target: Path, data: bytes) -> None:
    try:
        with atomic_open(target) as handle:
            handle.write(data)
    except DiskFullError as exc:
        if not exc.needed:
            raise DiskFullError(exc.folder, len(data), Path(target).name) from exc.__cause__
        raise


def atomic_write_json(target: Path, payload: Any) -> None:
    atomic_write_bytes(target, (json.dumps(payload, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode())


def atomic_write_stream(target: Path, chunks: Iterable[bytes], before_commit: Callable[[], None] | None = None) -> None:
    """Stream chunks to ``target``; ``before_commit`` may raise to abandon the write (e.g. a bad checksum)."""
    with atomic_open(target) as handle:
        for chunk in chunks:
            handle.write(chunk)
        if before_commit is not None:
            before_commit()
