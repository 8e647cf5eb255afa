"""``ImageIndex``: the one object the CLI and the service use to fill, search and maintain an image index.

On disk (one folder, ``settings.resolved_index_dir``)::

    index.json        sidecar: format version, encoder, dim, index type, image space, count, times, versions
    vectors.faiss     FAISS index of unit vectors, id = SQL primary key (all kinds but ivf-pq-mmap)
    ivf-pq-mmap/g*/   ivf-pq-mmap: codes + memory-mapped vectors (indexer/store/vector_files.py)
    (milvus-*)        POLYGLOT_INDEX_BACKEND=milvus: the vectors in a Milvus collection named in index.json instead
    metadata.sqlite   image metadata (unless POLYGLOT_DATABASE_URL points elsewhere, e.g. PostgreSQL)
    uploads/          images uploaded through the service, named <sha256><ext>

Commit protocol (why FAISS and SQL ids always agree): SQL is the source of truth and raw CNN features are
durable in the features cache before any row refers to them. Per batch: features → cache, rows → one SQL
transaction (commit), vectors → in-memory FAISS. The FAISS file is rewritten atomically every
``CHECKPOINT_SECONDS`` and at the end (and on Ctrl-C). Removal drops vectors in memory first, then deletes
rows, then rewrites the file. So after a crash the FAISS file can only hold ids SQL no longer has, or miss
ids SQL has; :meth:`ImageIndex.open` reconciles both (drop / re-add from the features cache). Paths are unique
in SQL, so a re-run after a crash skips what was committed and never duplicates.
Threads: searches take a shared lock, FAISS mutations/swaps an exclusive one (no reader sees a half-changed
index); writes are serialised in-process and across processes (``flock`` on ``.write.lock``)."""

from __future__ import annotations

import builtins
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from tqdm.auto import tqdm

from indexer.atomic import atomic_write_bytes
from indexer.encoders.base import ImageEncoder
from indexer.encoders.factory import build_image_encoder
from indexer.image_space import ImageSpace
from indexer.images import ImageDecodeError, content_hash, decode_image
from indexer.settings import Settings
from indexer.store import opening
from indexer.store.core import DB_NAME, AddReport, IndexCore, Prepared
from indexer.store.failures import BackendUnavailableError, DiskFullError, translated
from indexer.store.filtered import filtered_search
from indexer.store.index_kinds import choose_kind
from indexer.store.index_stats import index_stats
from indexer.store.ingest import FileBatch, Item, read_files, upload_suffix
from indexer.store.locks import IndexBusyError
from indexer.store.metadata import ImageRecord, MetadataStore, sqlite_url
from indexer.store.opening import IndexMismatchError, IndexNotFoundError
from indexer.store.rebuilding import rebuild_vectors
from indexer.store.uploads import UPLOADS_DIR
from indexer.store.vector_files import load_vectors, vector_bytes

__all__ = [
    "AddReport",
    "Hit",
    "ImageIndex",
    "ImageRecord",
    "IndexBusyError",
    "IndexMismatchError",
    "IndexNotFoundError",
]

CHECKPOINT_SECONDS = 30.0
PREFETCH_BATCHES = 1  # batches read and decoded ahead of the encoder (memory: one batch of pixels)


@dataclass
class Hit:
    id: int
    score: float


class ImageIndex(IndexCore):
    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        settings: Settings,
        *,
        image_space: ImageSpace | None = None,
        create: bool = True,
        encoder: ImageEncoder | None = None,
        rebuild_if_stale: bool = False,
        progress: bool = False,
    ) -> ImageIndex:
        """Open (or create) the index in ``settings.resolved_index_dir`` and make FAISS agree with SQL.

        The FAISS index kind and its tuning come from ``settings.vector_index``. ``rebuild_if_stale``: an index
        built in another image space is rebuilt instead of refused (the report is kept in ``rebuilt_on_open``);
        ``progress`` shows a bar for that rebuild.
        """
        folder = Path(settings.resolved_index_dir)
        sidecar = opening.read_sidecar(folder, create=create)
        encoder = encoder or build_image_encoder(settings)
        opening.check_encoder(folder, sidecar, encoder)
        space = image_space or opening.default_image_space(settings)
        stale = opening.is_stale(folder, sidecar, space, rebuild_if_stale=rebuild_if_stale)
        if sidecar is None:
            sidecar = opening.create_sidecar(folder, encoder, space)
        store = MetadataStore(settings.database_url or sqlite_url(folder / DB_NAME))
        vectors = load_vectors(folder, sidecar, settings.vector_index)
        index = cls(folder, settings, encoder, space, sidecar, store, vectors, settings.vector_index)
        try:
            if stale:
                index.rebuilt_on_open = index.rebuild(progress=progress)
            else:
                index._reconcile_if_free()
        except BaseException:
            index.close()
            raise
        return index

    # ------------------------------------------------------------------ properties
    @property
    def info(self) -> dict[str, Any]:
        return self.sidecar.to_json()

    @property
    def image_space(self) -> ImageSpace:
        return self._space

    @property
    def index_kind(self) -> str:
        """The FAISS index kind in use (the size rule's pick when the index was last grown or rebuilt)."""
        with self._rw.read():
            return self._vectors.kind if self._vectors is not None else self.sidecar.index_type

    @property
    def dim(self) -> int | None:
        return self.sidecar.dim

    # ------------------------------------------------------------------ reading
    def __len__(self) -> int:
        """Vectors in the index (a search's ``total_images``)."""
        with self._rw.read():
            return len(self._vectors) if self._vectors is not None else 0

    def search(
        self, vectors: np.ndarray, k: int, offset: int = 0, allowed: np.ndarray | None = None
    ) -> builtins.list[builtins.list[Hit]]:
        """Best ``k`` hits per query row after skipping ``offset``, best first; ``allowed``: only these ids
        (a filter, applied inside the search: :mod:`indexer.store.filtered`)."""
        queries = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
        if self.dim is not None and queries.shape[1] != self.dim:
            raise ValueError(f"query vectors have {queries.shape[1]} dimensions; the index stores {self.dim}")
        with self._rw.read():
            if self._vectors is None or k <= 0:
                return [[] for _ in range(len(queries))]
            if allowed is not None:
                results = filtered_search(self._vectors, queries, k + max(0, offset), allowed)
            else:
                results = self._vectors.search(queries, k + max(0, offset))
        return [
            [Hit(i, s) for i, s in zip(r.ids, r.scores, strict=True)][max(0, offset) : max(0, offset) + k]
            for r in results
        ]

    def vector(self, id: int) -> np.ndarray | None:
        with self._rw.read():
            return self._vectors.reconstruct(id) if self._vectors is not None else None

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        """Stored vectors of indexed ids, in order (CLC-C re-ranks search candidates by their exact scores)."""
        with self._rw.read():
            if self._vectors is None:
                raise KeyError("the index holds no vectors")
            return self._vectors.reconstruct_many(ids)

    def raw_features(self, id: int) -> np.ndarray | None:
        record = self.store.get(id)
        if record is None:
            return None
        found = self._feature_cache().get_many([record.sha256]).get(record.sha256)
        if found is not None:
            return found
        features, _ = self._features_for([(record.id, record.sha256, record.path)], progress=False)
        return features.get(record.id)

    def embed_image(self, image: Image.Image) -> tuple[np.ndarray, np.ndarray]:
        raw = self._loaded_encoder().predict([image])[0]
        return self._space.apply(raw)[0], raw

    def get(self, id: int) -> ImageRecord | None:
        return self.store.get(id)

    def list(self, offset: int = 0, limit: int = 100) -> builtins.list[ImageRecord]:
        return self.store.page(offset, limit)

    def stats(self) -> dict[str, Any]:
        """Counts, kind, sizes and dates (`polyglot index stats`)."""
        with self._rw.read():
            vector_file_bytes = vector_bytes(self.folder, self._vectors)
        return {**index_stats(self, len(self), vector_file_bytes), "read_only": self.read_only_reason}

    # ------------------------------------------------------------------ writing
    def add_paths(
        self, paths: Sequence[Path], metadata: Mapping[Path, dict] | None = None, *, progress: bool = True
    ) -> AddReport:
        report = AddReport()
        unique = list(dict.fromkeys(Path(p).expanduser().resolve() for p in paths))
        meta = {Path(k).expanduser().resolve(): v for k, v in (metadata or {}).items()}
        with self._writer():
            existing = self.store.by_paths([str(p) for p in unique])
            bar = tqdm(total=len(unique), unit="img", desc="indexing", disable=not progress, dynamic_ncols=True)
            last_save = time.monotonic()
            size = self.settings.index.batch_size
            batches = [unique[start : start + size] for start in range(0, len(unique), size)]

            workers = self._ingest_workers()

            def read_and_prepare(batch: builtins.list[Path]) -> tuple[FileBatch, Prepared]:
                files = read_files(batch, existing, meta, self.settings.index.max_file_bytes)
                prepared = self._prepare(files.items)
                if workers > 1:
                    self._encode(prepared, threads=1)  # this worker's share of the cores: one
                return files, prepared

            # Several workers (one per core, indexer/store/core.py: _ingest_workers): each reads, hashes, decodes
            # and encodes a batch of its own, so decoding and the network overlap on every core; this thread only
            # writes rows and vectors, in order. One worker (encoders that take no per-call threads): it reads and
            # decodes batch i+1 while the encoder runs on batch i here (benchmarks/indexing-12mpx.md).
            in_flight = workers + 1 if workers > 1 else PREFETCH_BATCHES
            unsaved: builtins.list[int] = []  # ids added since the last save: undone if the next save fails
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="index-decode") as pool:
                ahead = [pool.submit(read_and_prepare, batch) for batch in batches[:in_flight]]
                try:
                    with translated(self.folder):
                        for number, batch in enumerate(batches):
                            files, prepared = ahead.pop(0).result()
                            if number + in_flight < len(batches):
                                ahead.append(pool.submit(read_and_prepare, batches[number + in_flight]))
                            report.failed += files.failed
                            report.skipped += files.skipped
                            if files.updates:
                                self.store.update_many(files.updates)
                            records = self._ingest(files.items, report, prepared)
                            unsaved += [r.id for r in records]
                            report.added += len(records)
                            bar.update(len(batch))
                            bar.set_postfix(added=report.added, skipped=report.skipped, failed=len(report.failed))
                            if time.monotonic() - last_save > CHECKPOINT_SECONDS:
                                self._persist()
                                unsaved.clear()
                                last_save = time.monotonic()
                        self._persist()
                        unsaved.clear()
                except (DiskFullError, BackendUnavailableError):
                    # No space (or no backend) for this part: take back its rows and vectors now, so the index on
                    # disk and in SQL is the last saved state; the features are cached, a re-run redoes it fast.
                    report.added -= len(unsaved)
                    self._roll_back(unsaved)
                    raise
                except BaseException:
                    self._persist()  # Ctrl-C: everything committed so far is kept
                    raise
                finally:
                    for future in ahead:
                        future.cancel()
                    bar.close()
            self._maybe_change_kind(progress)
        return report

    def add_image_bytes(self, data: bytes, filename: str, metadata: dict | None = None) -> ImageRecord:
        image = decode_image(data, max_pixels=self.settings.index.max_image_pixels)
        sha = content_hash(data)
        meta = dict(metadata or {})
        meta["extra"] = {**(meta.get("extra") or {}), "filename": filename}
        report = AddReport()
        with self._writer():  # checked under the lock: two uploads of the same photo make one record
            existing = self.store.by_sha256(sha)
            if existing is not None:
                return existing
            # Absolute: the record must stay valid whatever the working directory of the next process. The suffix
            # is the detected format's, never the client's name (a PPM called evil.html is stored as .ppm).
            target = self.folder.resolve() / UPLOADS_DIR / f"{sha}{upload_suffix(data)}"
            # One transaction per photo across the file, the row and the vector: on any failure (no space, the
            # database or the vector server down) all three are undone before the error reaches the caller, so a
            # retry creates the photo.
            records: builtins.list[ImageRecord] = []
            done = False
            try:
                with translated(self.folder, len(data), "upload"):
                    atomic_write_bytes(target, data)
                    item = Item(target, data, sha, None, meta, image.size)
                    records = self._ingest([item], report, self._prepare([item], {sha: image}))
                    self._persist()
                done = True
            finally:
                if not done:
                    self._roll_back([r.id for r in records])
                if not (done and records):
                    target.unlink(missing_ok=True)  # not indexed: leave no orphan file behind
        if not records:
            raise ImageDecodeError(report.failed[0][1] if report.failed else "the image could not be indexed")
        return records[0]

    def remove(self, ids: Sequence[int]) -> int:
        with self._writer():
            present = self.store.id_keys([int(i) for i in ids])
            if not present:
                return 0
            doomed = [i for i, _, _ in present]
            with self._rw.write():  # vectors first: a search never returns an id whose row is gone
                if self._vectors is not None:
                    self._vectors.remove(doomed)
            self.store.delete(doomed)
            self._persist()
        uploads = (self.folder / UPLOADS_DIR).resolve()
        for _, _, path in present:
            if Path(path).parent == uploads and not self.store.by_paths([path]):
                Path(path).unlink(missing_ok=True)
        return len(doomed)

    def rebuild(self, *, progress: bool = True) -> AddReport:
        """Re-derive every vector (cached raw features, re-encoding on a miss) in the current image space,
        in the index kind the size rule picks now. Rows whose image can no longer be read are dropped
        (reported in ``failed``)."""
        report = AddReport()
        with self._writer():
            keys = self.store.id_keys()
            fresh, failed = rebuild_vectors(self, keys, choose_kind(len(keys), self.index_settings), progress)
            report.failed += failed
            if failed:
                lost = {path for path, _ in failed}
                self.store.delete([i for i, _, path in keys if path in lost])
            with self._rw.write():
                self._vectors = fresh
            self.sidecar.image_space = opening.space_config(self._space)
            self._persist()  # names the new vector files in the sidecar, then deletes the old ones
            report.added = len(fresh) if fresh is not None else 0
        return report

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        self.store.close()

    def __enter__(self) -> ImageIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
