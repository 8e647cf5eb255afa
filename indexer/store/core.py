"""The machinery under :class:`indexer.image_index.ImageIndex`: locks, ingest, persistence, reconciliation.

Kept apart so the public class reads as its API; see indexer/image_index.py for the commit protocol.
"""

from __future__ import annotations

import builtins
import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from indexer.atomic import atomic_write_bytes
from indexer.encoders.base import ImageEncoder
from indexer.feature_cache import FeatureCache
from indexer.image_space import ImageSpace
from indexer.images import ImageDecodeError, decode_image
from indexer.settings import Settings
from indexer.store import vector_files as vf
from indexer.store.failures import DiskFullError, translated
from indexer.store.index_kinds import KINDS, VectorIndexSettings, choose_kind
from indexer.store.ingest import Item, header_size
from indexer.store.locks import IndexBusyError, ReadWriteLock, process_lock
from indexer.store.metadata import ImageRecord, MetadataStore
from indexer.store.milvus_vectors import MilvusVectors
from indexer.store.mmap_index import MmapIvfIndex
from indexer.store.reencode import reencode
from indexer.store.sidecar import Sidecar
from indexer.store.uploads import UPLOADS_DIR, remove_orphan_uploads
from indexer.store.vector_files import FAISS_NAME, AnyVectors
from indexer.thumbnails import write_thumbnail

log = logging.getLogger("indexer.image_index")  # logged under the public class's module

__all__ = ["DB_NAME", "FAISS_NAME", "LOCK_NAME", "AddReport", "IndexCore"]
DB_NAME = "metadata.sqlite"
LOCK_NAME = ".write.lock"


@dataclass
class Prepared:
    """A batch ready for the encoder: features found in the cache, encoder inputs for the rest, bad images."""

    features: dict[str, np.ndarray]
    inputs: dict[str, Any] = field(default_factory=dict)  # sha256 → encoder.prepare(image)
    broken: dict[str, str] = field(default_factory=dict)  # sha256 → why it is not an image


@dataclass
class AddReport:
    added: int = 0
    skipped: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask: a container's or ``taskset``'s limit, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


class IndexCore(ABC):
    """State and private steps of an image index (one folder)."""

    def __init__(
        self,
        folder: Path,
        settings: Settings,
        encoder: ImageEncoder,
        space: ImageSpace,
        sidecar: Sidecar,
        store: MetadataStore,
        vectors: AnyVectors | None,
        index_settings: VectorIndexSettings,
    ) -> None:
        self.folder = folder
        self.settings = settings
        self.encoder = encoder
        self._space = space
        self.sidecar = sidecar
        self.store = store
        self._vectors = vectors
        self.index_settings = index_settings
        self._rw = ReadWriteLock()
        self._write_mutex = threading.RLock()
        self._writer_depth = 0
        self._encoder_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._cache: FeatureCache | None = None
        self.rebuilt_on_open: AddReport | None = None
        # Set when the last write could not be saved (no space): the index serves its last good state (plus, in
        # memory, what SQL has and the features cache restores) and the next write retries the pending save.
        self.read_only_reason: str | None = None

    @contextmanager
    def _writer(self) -> Iterator[None]:
        with self._write_mutex:
            if self._writer_depth:  # re-entered (add → kind change → rebuild): the file lock is already ours
                self._writer_depth += 1
                try:
                    yield
                finally:
                    self._writer_depth -= 1
                return
            with process_lock(self.folder / LOCK_NAME):
                self._writer_depth = 1
                try:
                    with translated(self.folder):
                        self._catch_up()
                        self._retry_pending_save()
                        yield
                finally:
                    self._writer_depth = 0

    def _retry_pending_save(self) -> None:
        """An index opened read-only after a failed save retries it before any new write (and refuses the write,
        with the same one-line reason, while there is still no space)."""
        if self.read_only_reason is None:
            return
        self._persist()
        log.warning("the pending index save succeeded: the index is writable again", extra={"folder": str(self.folder)})
        self.read_only_reason = None

    def _catch_up(self) -> None:
        """ivf-pq-mmap files and Milvus collections change in place: take in what another writing process
        appended (its rows and deletes), or the new generation its rebuild switched to, before writing after it."""
        on_disk = Sidecar.load(self.folder)
        if on_disk is None or not (isinstance(self._vectors, MmapIvfIndex | MilvusVectors) or vf.in_place(on_disk)):
            return  # the other kinds are rewritten whole; reconciling on open covers another process's writes
        if on_disk.files.get("vectors") != vf.vector_files(self._vectors):
            fresh = vf.load_vectors(self.folder, on_disk, self.index_settings)
            with self._rw.write():
                self._vectors = fresh
            self.sidecar.index_type, self.sidecar.files = on_disk.index_type, on_disk.files
            return
        if isinstance(self._vectors, MmapIvfIndex):
            with self._rw.write():
                self._vectors.catch_up()

    def check_backends(self) -> None:
        """Raise :class:`BackendUnavailableError` unless the metadata database (and the vector server, for the
        Milvus backend) answer now; ``/ready`` asks this on every call."""
        with translated(self.folder):
            self.store.ping()
        vectors = self._vectors
        if isinstance(vectors, MilvusVectors):
            vectors.ping()

    def _loaded_encoder(self) -> ImageEncoder:
        with self._encoder_lock:
            if not self.encoder.loaded:
                if self.settings.models.torch_threads:
                    import torch

                    torch.set_num_threads(self.settings.models.torch_threads)
                self.encoder.load()
        return self.encoder

    def _feature_cache(self) -> FeatureCache:
        if self._cache is None:
            # A ResNet checkpoint's width is only known once loaded; the bundled CNNs declare theirs.
            dim = self.sidecar.dim or self.encoder.dim or self._loaded_encoder().dim
            with self._cache_lock:
                if self._cache is None:
                    self._cache = FeatureCache(self.settings.resolved_cache_dir, self.encoder.cache_name, dim)
        return self._cache

    def _prepare(self, items: builtins.list[Item], decoded: dict[str, Image.Image] | None = None) -> Prepared:
        """The CPU work before the network for a batch: cached features, else decode + ``encoder.prepare``.
        Thread-safe: ``add_paths`` runs it in a worker thread for the next batch while this one is encoded."""
        prepared = Prepared(self._feature_cache().get_many([item.sha256 for item in items]))
        for item in items:
            sha = item.sha256
            if sha in prepared.features or sha in prepared.inputs or sha in prepared.broken:
                continue
            image = (decoded or {}).get(sha)
            if image is None:
                try:
                    image = decode_image(
                        item.data, max_pixels=self.settings.index.max_image_pixels, min_side=self._decode_side()
                    )
                except ImageDecodeError as exc:
                    prepared.broken[sha] = str(exc)
                    continue
            # item.size stays as given: a reduced decode's size is not the photo's (read from the header at insert)
            prepared.inputs[sha] = self.encoder.prepare(image)
            if self.settings.index.index_thumbnails:
                self._thumbnail(sha, image)
        return prepared

    def _encode(self, prepared: Prepared, threads: int | None = None) -> dict[str, np.ndarray]:
        """The network on the prepared inputs: features into the cache (before any row refers to them) and into
        ``prepared.features``, whose inputs are dropped. Thread-safe: with several ingest workers each runs it on
        the batch it decoded, on ``threads`` intra-op threads (:meth:`_ingest_workers`)."""
        todo = [sha for sha in prepared.inputs if sha not in prepared.features]
        fresh: dict[str, np.ndarray] = {}
        if todo:
            computed = self._loaded_encoder().predict_prepared([prepared.inputs[sha] for sha in todo], threads=threads)
            fresh = dict(zip(todo, computed, strict=True))
            self._feature_cache().put_many(fresh)
            prepared.features.update(fresh)
        prepared.inputs.clear()  # the pixels of a batch are not kept once encoded
        return fresh

    def _ingest_workers(self) -> int:
        """Threads that read, hash, decode and encode batches side by side in ``add_paths``. One per core when the
        encoder runs a call on one thread (``per_call_threads``): each worker then keeps one core busy with its own
        batch, decoding included, at the least CPU per photo (indexer/encoders/efficientnet_onnx.py). Otherwise
        one, which decodes the next batch while the encoder runs over the cores on this one."""
        if self.settings.index.indexing_workers:
            return self.settings.index.indexing_workers
        return available_cores() if self.encoder.per_call_threads else 1

    def _decode_side(self) -> int | None:
        """The short side photos are decoded down to: the encoder's, and the thumbnail's when it is written from
        the same decode (a 256-px thumbnail needs a short side of at most 256)."""
        side = self.encoder.decode_side
        if self.settings.index.decode_full_size or side is None:
            return None
        return max(side, self.settings.index.thumbnail_size) if self.settings.index.index_thumbnails else side

    def _thumbnail(self, sha: str, image: Image.Image) -> None:
        try:
            write_thumbnail(self.settings.resolved_cache_dir, sha, image, self.settings.index.thumbnail_size)
        except OSError as exc:  # a cache: indexing goes on, the service makes it on request
            log.warning("thumbnail not written", extra={"sha256": sha, "error": str(exc)})

    def _ingest(
        self, items: builtins.list[Item], report: AddReport, prepared: Prepared | None = None
    ) -> builtins.list[ImageRecord]:
        """Features (cache or encoder) → rows (one transaction) → vectors. Returns the new records."""
        if not items:
            return []
        prepared = prepared or self._prepare(items)
        features, broken = dict(prepared.features), prepared.broken
        features.update(self._encode(prepared))
        good: builtins.list[Item] = []
        for item in items:
            if item.sha256 in broken:
                report.failed.append((str(item.path), broken[item.sha256]))
                continue
            if item.size is None:
                try:
                    item.size = header_size(item.data)
                except ImageDecodeError as exc:
                    report.failed.append((str(item.path), str(exc)))
                    continue
            good.append(item)
        if not good:
            return []
        replaced = [item.replaces for item in good if item.replaces is not None]
        records = self.store.insert([item.to_new_image() for item in good], replace_ids=replaced)
        matrix = self._space.apply(np.stack([features[item.sha256] for item in good]))
        try:
            self._add_vectors([r.id for r in records], matrix, replaced)
        except BaseException:
            # The vector backend failed (a Milvus outage): a row may only exist with its vector, so take the rows
            # back now rather than at the next start (the replaced rows stay gone: re-adding the file restores it).
            self._roll_back([r.id for r in records], vectors_added=False)
            raise
        return records

    def _roll_back(self, ids: Sequence[int], vectors_added: bool = True) -> None:
        """Undo rows (and their vectors, when ``vectors_added``) whose write could not be completed; best effort:
        what cannot be undone now (the database is down too) is reconciled when the index is next opened."""
        if not ids:
            return
        if vectors_added:
            try:
                with self._rw.write():
                    if self._vectors is not None:
                        self._vectors.remove(list(ids))
            except Exception as exc:  # the vector backend is what failed; the reconcile drops them
                log.warning(
                    "could not remove vectors of a failed write", extra={"ids": list(ids)[:20], "error": str(exc)}
                )
        try:
            self.store.delete(list(ids))
        except Exception as exc:
            log.error("could not delete rows of a failed write", extra={"ids": list(ids)[:20], "error": str(exc)})

    def _add_vectors(self, ids: Sequence[int], matrix: np.ndarray, replaced: Sequence[int] = ()) -> None:
        with self._rw.write():
            if self._vectors is None:
                self._vectors = vf.new_vectors(matrix.shape[1], self.index_settings)
                self.sidecar.dim = matrix.shape[1]
            if replaced:
                self._vectors.remove(replaced)
            self._vectors.add(ids, matrix)

    def _features_for(
        self, keys: Sequence[tuple[int, str, str]], progress: bool
    ) -> tuple[dict[int, np.ndarray], builtins.list[tuple[str, str]]]:
        """Raw features by id for ``(id, sha256, path)`` rows: cached, else re-encoded from the file."""
        return reencode(
            keys, self._feature_cache(), self.encoder.prepare, self._loaded_encoder, self.settings, progress
        )

    def _persist(self) -> None:
        """Write the vectors, then the sidecar, both atomically (the sidecar describes the files)."""
        with self._rw.read():
            vectors = self._vectors
            if isinstance(vectors, MmapIvfIndex | MilvusVectors):
                vectors.commit()  # rows are durable as they are added; mmap: this refreshes the codes snapshot
                data = None
            else:
                data = vectors.to_bytes() if vectors is not None else None
            count = len(vectors) if vectors is not None else 0
            kind = vectors.kind if vectors is not None else "flat"  # what the first added vectors create
        if data is not None:
            atomic_write_bytes(self.folder / FAISS_NAME, data)
        elif vectors is None:
            (self.folder / FAISS_NAME).unlink(missing_ok=True)
        changed_files = self.sidecar.index_type != kind or self.sidecar.files.get("vectors") != vf.vector_files(vectors)
        self.sidecar.count = count
        self.sidecar.index_type = kind
        self.sidecar.files["vectors"] = vf.vector_files(vectors)
        self.sidecar.save(self.folder)
        if changed_files:  # a rebuild replaced the vector files: the old set is garbage now
            vf.remove_unnamed(self.folder, self.sidecar)
            if isinstance(vectors, MilvusVectors):
                vectors.drop_other_generations()

    def _maybe_change_kind(self, progress: bool) -> None:
        """Apply the size rule after growth (never shrink automatically: `rebuild` does that)."""
        current = self._vectors.kind if self._vectors is not None else None
        count = len(self._vectors) if self._vectors is not None else 0  # called by the writer: nothing else changes them
        wanted = choose_kind(count, self.index_settings)
        if current is None or wanted == current:
            return
        if self.index_settings.kind == "auto" and KINDS.index(wanted) < KINDS.index(current):
            return
        log.info("index kind change", extra={"from": current, "to": wanted, "count": count})
        self.rebuild(progress=progress)

    def _reconcile_if_free(self) -> None:
        try:
            with self._writer():
                for stale in self.folder.glob(".*.tmp"):  # a writer killed inside an atomic write
                    stale.unlink(missing_ok=True)
                vf.remove_unnamed(self.folder, self.sidecar)  # a rebuild killed before it switched
                self._reconcile()
                remove_orphan_uploads(self.folder / UPLOADS_DIR, self.store)
        except IndexBusyError:
            # Another process is mid-write; it reconciles itself. Read what is on disk.
            log.info("index busy: skipping reconcile", extra={"index_dir": str(self.folder)})
        except DiskFullError as exc:
            # The files on disk are the last good state (atomic writes); what the reconcile restored is in memory.
            # Serve that, read-only, rather than refuse to open: the next write retries the save.
            self.read_only_reason = str(exc)
            log.warning("index opened read-only: its pending save failed", extra={"reason": str(exc)})

    def _reconcile(self) -> None:
        # numpy set operations: at a million images Python sets cost seconds of start-up
        sql_ids = np.asarray(self.store.ids(), dtype=np.int64)
        faiss_ids = self._vectors.ids() if self._vectors is not None else np.zeros(0, dtype=np.int64)
        if np.array_equal(sql_ids, faiss_ids):  # the usual case: both sorted, one O(n) pass
            extra, missing = np.zeros(0, dtype=np.int64), []
        else:  # ids are unique on both sides (primary keys; FAISS stores each once)
            extra = np.setdiff1d(faiss_ids, sql_ids, assume_unique=True)
            missing = np.setdiff1d(sql_ids, faiss_ids, assume_unique=True).tolist()
        if not len(extra) and not missing and self.sidecar.count == len(faiss_ids):
            return
        if len(extra) and self._vectors is not None:
            with self._rw.write():
                self._vectors.remove(extra)
        if missing:
            keys = self.store.id_keys(missing)
            features, failed = self._features_for(keys, progress=False)
            if failed:
                lost = {path for path, _ in failed}
                self.store.delete([i for i, _, path in keys if path in lost])
                log.warning("dropped rows whose images are gone", extra={"failed": failed[:20]})
            ids = sorted(features)
            if ids:
                self._add_vectors(ids, self._space.apply(np.stack([features[i] for i in ids])))
        log.warning(
            "index reconciled after an interrupted write",
            extra={"dropped_vectors": len(extra), "restored_vectors": len(missing)},
        )
        self._persist()

    @abstractmethod
    def rebuild(self, *, progress: bool = True) -> AddReport:
        """Re-derive every vector (see ImageIndex.rebuild); used when the index kind must change."""
