"""Noticing what another process saved to the same index folder, and taking it in.

Two long-running processes can hold one index open, each with its vectors in memory: ``polyglot index watch`` in a
terminal and ``polyglot serve --watch``, say. The folder's ``flock`` lets one write at a time, but a process that
changed its own in-memory copy and saved it would write over what the other saved since it loaded that copy (the
FAISS kinds are saved whole), and the other's photos would be missing from its searches until it reopened.

So every save numbers itself: :meth:`~indexer.store.maintenance.Maintenance.persist` writes ``revision`` + 1 into
the sidecar, under the lock, and the sidecar held in memory records the revision its vectors are at. Then:

* a writer, holding the lock and before changing anything, reads the sidecar (:func:`catch_up`): when its revision
  is not ours, or it names another vector set, another process saved in between, and its set is loaded (FAISS files,
  a rebuild's new set) or its appends taken in (sets changed in place), before this process writes after it;
* a process that is not writing (the service between uploads) checks when it searches, at most every
  ``REFRESH_SECONDS`` and with one ``stat`` of the sidecar (:meth:`Revisions.replaced`): only a replaced sidecar
  file is read, and only a new revision loads vectors (beside the ones serving, then swapped in). Sidecars and
  FAISS files are replaced atomically (rename) and ``ivf-pq-mmap`` rows are appended in order, so what it reads
  without the lock is a whole saved state.

What this does not cover is a writer killed between saving its vectors and saving the sidecar, or before its first
save: its rows without vectors are restored by the next open's reconciliation, as before.

The caption index (:mod:`indexer.captions.index`) follows the same protocol on its own sidecar (``captions.json``,
one FAISS file per language): it notices a save with :class:`Revisions` and takes it in itself, loading only the
languages whose files were saved since.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from indexer.store import vector_files as vf
from indexer.store.index_state import IndexState
from indexer.store.opening import IndexMismatchError, check_encoder
from indexer.store.sidecar import SIDECAR_NAME, Sidecar

log = logging.getLogger("indexer.image_index")  # logged under the public class's module

__all__ = ["REFRESH_SECONDS", "Revisions", "catch_up", "file_stamp"]

REFRESH_SECONDS = 1.0  # how long a reading process may serve vectors older than another process's save

FileStamp = tuple[int, int, int] | None  # (inode, mtime ns, size) of the sidecar file; None when there is none
UNSEEN: FileStamp = (-1, -1, -1)  # matches no file: the next check reads the sidecar again


def file_stamp(path: Path) -> FileStamp:
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return (status.st_ino, status.st_mtime_ns, status.st_size)


class Revisions:
    """Which sidecar file this process last dealt with, and when a reading process is to look again.

    Created before the index reads its sidecar: the file seen is then the one read, or an older one (read again at
    the first check, harmlessly), never a newer one that would go unnoticed.
    """

    def __init__(self, folder: Path, sidecar_name: str = SIDECAR_NAME) -> None:
        self.path = Path(folder) / sidecar_name  # the image index's index.json, or another index's sidecar
        self.seen = file_stamp(self.path)
        # A search compares the clock with this (an attribute: no call) and only then calls replaced().
        self.next_check = time.monotonic() + REFRESH_SECONDS

    def saw(self) -> None:
        """The sidecar file on disk now is what the index holds (after a save, under the lock)."""
        self.seen = file_stamp(self.path)

    def forget(self) -> None:
        """Read the sidecar again at the next check (taking in what it names failed this time)."""
        self.seen = UNSEEN

    def replaced(self) -> bool:
        """Whether the sidecar file was replaced since this process last dealt with it (one ``stat``); the next
        check is due in ``REFRESH_SECONDS``."""
        self.next_check = time.monotonic() + REFRESH_SECONDS
        return file_stamp(self.path) != self.seen


def catch_up(state: IndexState, revisions: Revisions, *, writing: bool) -> bool:
    """Take in what another process saved since this one loaded or saved (see the module docstring); returns
    whether there was anything. ``writing``: the caller holds the folder's lock and is about to write, so a set
    changed in place is read up to its end even when no save says so (a writer killed before saving), and an
    index another process rebuilt for another encoder or image space is refused rather than served.

    The caller also holds the maintenance's write mutex: nothing else in this process swaps the vectors meanwhile.
    """
    stamp = file_stamp(state.folder / SIDECAR_NAME)  # before reading: a newer file is only read again later
    on_disk = Sidecar.load(state.folder)
    if on_disk is None:
        return False
    revisions.seen = stamp  # whatever follows, this file is dealt with
    current = state.vectors
    kind = current.kind if current is not None else state.sidecar.index_type
    same_set = on_disk.files.get("vectors") == vf.vector_files(current) and on_disk.index_type == kind
    appended = current if same_set and vf.changes_in_place(kind) else None  # a set changed in place, still named
    if on_disk.revision == state.sidecar.revision and same_set:
        if writing and appended is not None:
            with state.rw.write():
                appended.catch_up()
        return False
    mismatch = _mismatch(state, on_disk)
    if mismatch is not None:
        if writing:
            raise IndexMismatchError(mismatch)
        log.warning("another process changed the index into one this one cannot serve", extra={"reason": mismatch})
        return False
    if appended is not None:  # the same generation: its new rows and deletes are read from its files
        with state.rw.write():
            appended.catch_up()
    else:  # a FAISS file saved whole, or another set: loaded beside the one serving, then swapped in
        state.swap_vectors(vf.load_vectors(state.folder, on_disk, state.index_settings))
    state.sidecar = on_disk
    log.info(
        "took in another process's save",
        extra={"index_dir": str(state.folder), "revision": on_disk.revision, "count": on_disk.count},
    )
    return True


def _mismatch(state: IndexState, on_disk: Sidecar) -> str | None:
    """Why the index saved on disk cannot be served by this process (another encoder, or another image space than
    the one it wants or the one it holds: a stale index it is about to rebuild), or None."""
    try:
        check_encoder(state.folder, on_disk, state.encoder)
    except IndexMismatchError as exc:
        return str(exc)
    if on_disk.image_space_fingerprint not in (state.space.fingerprint, state.sidecar.image_space_fingerprint):
        return (
            f"another process rebuilt the index in {state.folder} in image space {on_disk.image_space_fingerprint!r}; "
            f"this one uses {state.space.fingerprint!r}: restart it"
        )
    return None
