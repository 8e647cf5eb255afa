"""Keeping an image index's files, rows and vectors in agreement: write sessions, persisting, reconciling after a
crash, removing photos, rebuilding and re-encoding the vectors, and the stats that describe the result.

The commit protocol these steps keep is written down in :mod:`indexer.image_index`. In short: SQL is the source of
truth; vectors are made durable by :meth:`Maintenance.persist` (the backend's ``commit``, then the sidecar, which
names the vector set, last); :meth:`Maintenance.reconcile_if_free` repairs whatever a killed writer left (vectors
SQL no longer has, rows without vectors, half-written files, orphan uploads). Every write runs inside
:meth:`Maintenance.writing`: one writing thread per process, one writing process per folder (``flock``), after
taking in what another process changed.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from indexer.store import opening
from indexer.store import vector_files as vf
from indexer.store.backend import VectorBackend
from indexer.store.failures import DiskFullError, translated
from indexer.store.index_kinds import KINDS, MMAP_KIND, bytes_per_vector, choose_kind
from indexer.store.index_state import IndexState
from indexer.store.ingest import AddReport
from indexer.store.locks import LOCK_NAME, IndexBusyError, process_lock
from indexer.store.reencode import reencode
from indexer.store.revisions import Revisions, catch_up
from indexer.store.sidecar import DB_NAME
from indexer.store.sql import redact_url
from indexer.store.uploads import UPLOADS_DIR, remove_orphan_uploads

log = logging.getLogger("indexer.image_index")  # logged under the public class's module

__all__ = ["Maintenance"]

REBUILD_CHUNK = 50_000  # features read and transformed per step of a rebuild: 256 MB of 1280-d float32


class Maintenance:
    """The maintenance role of one open index (see the module docstring)."""

    def __init__(self, state: IndexState, revisions: Revisions) -> None:
        self.state = state
        self.revisions = revisions  # the sidecar file this process last loaded or saved
        self._write_mutex = threading.RLock()
        self._writer_depth = 0

    # ------------------------------------------------------------------ write sessions
    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the index for writing: in this process (re-entrant: add → kind change → rebuild) and across
        processes; what another process saved since this one loaded or saved is taken in first, and a save left
        pending by a full disk is retried (refusing the write, with the same reason, while there is still no space)."""
        state = self.state
        with self._write_mutex:
            if self._writer_depth:  # re-entered: the file lock is already ours
                self._writer_depth += 1
                try:
                    yield
                finally:
                    self._writer_depth -= 1
                return
            with process_lock(state.folder / LOCK_NAME):
                self._writer_depth = 1
                try:
                    with translated(state.folder):
                        # Another process may have saved since this one loaded or saved: write after it, not over it.
                        catch_up(state, self.revisions, writing=True)
                        self._retry_pending_save()
                        yield
                finally:
                    self._writer_depth = 0

    def _retry_pending_save(self) -> None:
        state = self.state
        if state.read_only_reason is None:
            return
        # What the failed save held (a reconcile's restored vectors) may have been replaced by another process's
        # save since: reconcile again (a no-op when nothing is missing), then save.
        self._reconcile()
        self.persist()
        log.warning(
            "the pending index save succeeded: the index is writable again", extra={"folder": str(state.folder)}
        )
        state.read_only_reason = None

    def refresh(self) -> None:
        """In a process that is not writing now: serve what another process saved since this one last loaded or
        saved (the facade calls this when ``revisions.replaced()``; see :mod:`indexer.store.revisions`). Never
        raises: a save that cannot be read now leaves the current vectors serving, and is tried at the next check."""
        if not self._write_mutex.acquire(blocking=False):
            self.revisions.forget()  # a write in this process takes it in under the lock; look again next time
            return
        try:
            if self._writer_depth:  # re-entered from this thread's own write session, which took it in
                return
            catch_up(self.state, self.revisions, writing=False)
        except Exception as exc:
            self.revisions.forget()
            log.warning("could not take in another process's save", extra={"error": str(exc)})
        finally:
            self._write_mutex.release()

    # ------------------------------------------------------------------ persisting
    def persist(self) -> None:
        """Make the vectors durable, then write the sidecar (atomically: it names the vector files) under the next
        revision (called under the folder's lock, after :func:`~indexer.store.revisions.catch_up`)."""
        state = self.state
        with state.rw.read():
            vectors = state.vectors
            if vectors is not None:
                vectors.commit()
            count = len(vectors) if vectors is not None else 0
            kind = vectors.kind if vectors is not None else "flat"  # what the first added vectors create
        if vectors is None:
            (state.folder / vf.FAISS_NAME).unlink(missing_ok=True)
        sidecar = state.sidecar
        named = vf.vector_files(vectors)
        changed_files = sidecar.index_type != kind or sidecar.files.get("vectors") != named
        sidecar.count, sidecar.index_type = count, kind
        sidecar.files["vectors"] = named
        sidecar.revision += 1
        try:
            sidecar.save(state.folder)
        except BaseException:
            sidecar.revision -= 1  # not saved: still the revision on disk (no reload of our own state next time)
            raise
        self.revisions.saw()
        if changed_files:  # a rebuild replaced the vector set: the old one is garbage now
            vf.remove_unnamed(state.folder, sidecar)
            if vectors is not None:
                vectors.drop_replaced()

    # ------------------------------------------------------------------ reconciling (on open)
    def reconcile_if_free(self) -> None:
        """Repair what a killed writer left, unless another process is writing now (it repairs itself)."""
        state = self.state
        try:
            with self.writing():
                for stale in state.folder.glob(".*.tmp"):  # a writer killed inside an atomic write
                    stale.unlink(missing_ok=True)
                vf.remove_unnamed(state.folder, state.sidecar)  # a rebuild killed before it switched
                self._reconcile()
                remove_orphan_uploads(state.folder / UPLOADS_DIR, state.store)
        except IndexBusyError:
            # Another process is mid-write; it reconciles itself. Read what is on disk.
            log.info("index busy: skipping reconcile", extra={"index_dir": str(state.folder)})
        except DiskFullError as exc:
            # The files on disk are the last good state (atomic writes); what the reconcile restored is in memory.
            # Serve that, read-only, rather than refuse to open: the next write retries the save.
            state.read_only_reason = str(exc)
            log.warning("index opened read-only: its pending save failed", extra={"reason": str(exc)})

    def _reconcile(self) -> None:
        state = self.state
        # numpy set operations: at a million images Python sets cost seconds of start-up
        sql_ids = np.asarray(state.store.ids(), dtype=np.int64)
        vector_ids = state.vectors.ids() if state.vectors is not None else np.zeros(0, dtype=np.int64)
        if np.array_equal(sql_ids, vector_ids):  # the usual case: both sorted, one O(n) pass
            extra, missing = np.zeros(0, dtype=np.int64), []
        else:  # ids are unique on both sides (primary keys; a backend stores each once)
            extra = np.setdiff1d(vector_ids, sql_ids, assume_unique=True)
            missing = np.setdiff1d(sql_ids, vector_ids, assume_unique=True).tolist()
        if not len(extra) and not missing and state.sidecar.count == len(vector_ids):
            return
        if len(extra):
            state.remove_vectors(extra)
        if missing:
            keys = state.store.id_keys(missing)
            features, failed = self.features_for(keys, progress=False)
            if failed:
                lost = {path for path, _ in failed}
                state.store.delete([i for i, _, path in keys if path in lost])
                log.warning("dropped rows whose images are gone", extra={"failed": failed[:20]})
            ids = sorted(features)
            if ids:
                state.add_vectors(ids, state.space.apply(np.stack([features[i] for i in ids])))
        log.warning(
            "index reconciled after an interrupted write",
            extra={"dropped_vectors": len(extra), "restored_vectors": len(missing)},
        )
        self.persist()

    # ------------------------------------------------------------------ removing
    def remove(self, ids: Sequence[int]) -> int:
        """Remove photos by id (unknown ids ignored), all of a photo or nothing: its vector first (a search never
        returns an id whose row is gone), then the save of the vectors, then its row, then an uploaded file with
        the last row naming it. When the save or the row delete fails (no space: :class:`DiskFullError`; the
        database down), the vectors are put back and the error raised: the photo is still whole, served and
        searchable, and on disk the row is there (a saved set without its vector is completed from the features
        cache when the index is next opened). Deleting the file, last, needs no space."""
        state = self.state
        with self.writing():
            present = state.store.id_keys([int(i) for i in ids])
            if not present:
                return 0
            doomed = [i for i, _, _ in present]
            kept = self._stored_vectors(doomed)
            state.remove_vectors(doomed)
            try:
                with translated(state.folder, what="removal"):
                    self.persist()
                    state.store.delete(doomed)
            except BaseException:
                self._put_back(kept)
                raise
        uploads = (state.folder / UPLOADS_DIR).resolve()
        for _, _, path in present:
            if Path(path).parent == uploads and not state.store.by_paths([path]):
                Path(path).unlink(missing_ok=True)
        return len(doomed)

    def _stored_vectors(self, ids: Sequence[int]) -> tuple[builtins.list[int], np.ndarray | None]:
        """The ids among ``ids`` that have a vector, and their vectors (to put back if a removal fails)."""
        state = self.state
        with state.rw.read():
            if state.vectors is None:
                return [], None
            found = [(i, v) for i in ids if (v := state.vectors.reconstruct(i)) is not None]
        if not found:
            return [], None
        return [i for i, _ in found], np.stack([v for _, v in found]).astype(np.float32)

    def _put_back(self, kept: tuple[builtins.list[int], np.ndarray | None]) -> None:
        """Undo a removal's vector step, in memory, and try to save that again (best effort: what cannot be saved
        now is reconciled from SQL, which still has the rows, when the index is next opened)."""
        ids, matrix = kept
        if not ids or matrix is None:
            return
        try:
            self.state.add_vectors(ids, matrix)
        except Exception as exc:  # the vector server is what failed: the next open reconciles
            log.warning(
                "could not put back the vectors of a failed removal", extra={"ids": ids[:20], "error": str(exc)}
            )
            return
        try:
            self.persist()
        except Exception as exc:  # the next write retries the save (``writing``), as after a failed open
            self.state.read_only_reason = str(exc)
            log.warning("vectors of a failed removal put back in memory, not saved yet", extra={"error": str(exc)})

    # ------------------------------------------------------------------ re-encoding and rebuilding
    def features_for(
        self, keys: Sequence[tuple[int, str, str]], progress: bool
    ) -> tuple[dict[int, np.ndarray], builtins.list[tuple[str, str]]]:
        """Raw features by id for ``(id, sha256, path)`` rows: cached, else re-encoded from the file."""
        state = self.state
        side = state.settings.index.decode_side(state.encoder.decode_side)  # as `index add` decodes: same vectors
        return reencode(
            keys, state.feature_cache(), state.encoder.prepare, state.loaded_encoder, state.settings, progress, side
        )

    def rebuild(self, *, progress: bool = True) -> AddReport:
        """Re-derive every vector (cached raw features, re-encoding on a miss) in the current image space, in the
        index kind the size rule picks now, into a new set that replaces the old one only once complete. Rows
        whose image can no longer be read are dropped (reported in ``failed``)."""
        state = self.state
        report = AddReport()
        with self.writing():
            keys = state.store.id_keys()
            fresh, failed = self._rebuilt_vectors(keys, choose_kind(len(keys), state.index_settings), progress)
            report.failed += failed
            if failed:
                lost = {path for path, _ in failed}
                state.store.delete([i for i, _, path in keys if path in lost])
            state.swap_vectors(fresh)
            state.sidecar.image_space = opening.space_config(state.space)
            self.persist()  # names the new vector set in the sidecar, then deletes the old one
            report.added = len(fresh) if fresh is not None else 0
        return report

    def _rebuilt_vectors(
        self, keys: Sequence[tuple[int, str, str]], kind: str, progress: bool
    ) -> tuple[VectorBackend | None, builtins.list[tuple[str, str]]]:
        """A new set of ``kind`` for the ``(id, sha256, path)`` rows, and the ``(path, reason)`` of rows whose image
        could not be read; streamed in chunks (bounded memory). Nothing the index serves now is touched."""
        state = self.state
        builder = vf.new_builder(state.folder, kind, state.sidecar.dim, state.index_settings)
        failed: builtins.list[tuple[str, str]] = []
        try:
            for start in range(0, len(keys), REBUILD_CHUNK):
                features, lost = self.features_for(keys[start : start + REBUILD_CHUNK], progress=progress)
                failed += lost
                ids = np.array(sorted(features), dtype=np.int64)
                if len(ids):
                    builder.append(ids, state.space.apply(np.stack([features[int(i)] for i in ids])))
            return builder.finish(), failed
        except BaseException:
            builder.abandon()
            raise

    def change_kind_if_grown(self, progress: bool) -> None:
        """Apply the size rule after growth (never shrink automatically: ``rebuild`` does that)."""
        state = self.state
        with state.rw.read():
            current = state.vectors.kind if state.vectors is not None else None
        count = state.count()
        wanted = choose_kind(count, state.index_settings)
        if current is None or wanted == current:
            return
        if state.index_settings.kind == "auto" and KINDS.index(wanted) < KINDS.index(current):
            return
        log.info("index kind change", extra={"from": current, "to": wanted, "count": count})
        self.rebuild(progress=progress)

    # ------------------------------------------------------------------ describing
    def kind(self) -> str:
        """The index kind in use (the size rule's pick when the index was last grown or rebuilt)."""
        state = self.state
        with state.rw.read():
            return state.vectors.kind if state.vectors is not None else state.sidecar.index_type

    def stats(self) -> dict[str, Any]:
        """What ``polyglot index stats`` prints: counts, kind (and the size rule's pick now), sizes on disk and in
        memory per image, database, dates."""
        state = self.state
        with state.rw.read():
            vectors = state.vectors
            count = len(vectors) if vectors is not None else 0
            faiss_path = state.folder / vf.FAISS_NAME
            vector_bytes = (
                vectors.disk_bytes()
                if vectors is not None
                else (faiss_path.stat().st_size if faiss_path.exists() else 0)
            )
        db_path = state.folder / DB_NAME
        db_bytes = db_path.stat().st_size if state.settings.database_url is None and db_path.exists() else None
        kind = self.kind()
        dim = state.sidecar.dim
        return {
            "count": count,
            "rows": state.store.count(),
            "image_encoder": state.encoder.name,
            "image_precision": getattr(state.encoder, "precision", "fp32"),  # what encodes new photos now
            "dim": dim,
            "index_type": kind,
            "index_type_rule": choose_kind(count, state.index_settings),
            "image_space": state.space.fingerprint,
            "index_dir": str(state.folder),
            "database": redact_url(state.store.url),
            "vectors_on_disk_only": kind == MMAP_KIND,  # full vectors memory-mapped, compressed codes in RAM
            "faiss_file_bytes": vector_bytes,
            "metadata_file_bytes": db_bytes,
            "disk_bytes_per_image": round(vector_bytes / count, 1) if count else None,
            "memory_bytes_per_image": bytes_per_vector(kind, dim, state.index_settings) if dim else None,
            "images_total_bytes": state.store.total_bytes(),
            "created_at": state.sidecar.created_at,
            "updated_at": state.sidecar.updated_at,
            "read_only": state.read_only_reason,
        }

    def check_backends(self) -> None:
        """Raise :class:`~indexer.store.failures.BackendUnavailableError` unless the metadata database (and a vector server) answer now;
        ``/ready`` asks this on every call."""
        state = self.state
        with translated(state.folder):
            state.store.ping()
        vectors = state.vectors
        if vectors is not None:
            vectors.ping()
