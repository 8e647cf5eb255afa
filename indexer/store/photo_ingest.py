"""Photos into an image index: read → decode → features → rows → vectors, crash-safe.

Per batch of ``POLYGLOT_BATCH_SIZE`` files: read and hash them (unchanged files are skipped), decode each one and
turn it into the encoder's input at once (no decoded photo waits for the encoder), take cached features or run
the encoder, put new features in the features cache, insert the rows in one SQL transaction, then add the vectors.
With an encoder that runs a call on one thread (the ONNX CNNs), one worker per core reads, decodes and encodes a
batch of its own and this thread only writes rows and vectors, in order; otherwise one worker reads and decodes
batch i+1 while the encoder runs on batch i (``POLYGLOT_INDEXING_WORKERS``). The vectors are persisted every
``checkpoint_seconds`` and at the end (and on Ctrl-C); on a full disk or a backend outage the rows and vectors
added since the last save are taken back before the error reaches the caller. An upload is one transaction
across its file, its row and its vector. Why this order is crash-safe: :mod:`indexer.image_index`.
"""

from __future__ import annotations

import builtins
import logging
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from indexer.atomic import atomic_write_bytes
from indexer.file_stamps import FileStamps, Stamp
from indexer.image_sources import split_storable
from indexer.images import ImageDecodeError, content_hash, decode_image
from indexer.photo_metadata import PhotoFacts
from indexer.places import gazetteer
from indexer.store.failures import BackendUnavailableError, DiskFullError, translated
from indexer.store.index_state import IndexState
from indexer.store.ingest import AddReport, FileBatch, Item, header_size, read_files, upload_suffix
from indexer.store.maintenance import Maintenance
from indexer.store.metadata import ImageRecord
from indexer.store.uploads import UPLOADS_DIR, lost_upload
from indexer.thumbnails import write_thumbnail

log = logging.getLogger("indexer.image_index")  # logged under the public class's module

__all__ = ["PREFETCH_BATCHES", "PhotoIngest", "Prepared"]

PREFETCH_BATCHES = 1  # one worker: batches read and decoded ahead of the encoder (memory: one batch of pixels)


def fact(row: PhotoFacts | dict[str, Any], name: str) -> Any:
    return row.get(name) if isinstance(row, dict) else getattr(row, name)


def available_cores() -> int:
    """CPUs this process may run on (its affinity mask: a container's or ``taskset``'s limit, not the host's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - platforms without sched_getaffinity
        return max(1, os.cpu_count() or 1)


@dataclass
class Prepared:
    """A batch ready for the encoder: features found in the cache, encoder inputs for the rest, bad images."""

    features: dict[str, np.ndarray]
    inputs: dict[str, Any] = field(default_factory=dict)  # sha256 → encoder.prepare(image)
    broken: dict[str, str] = field(default_factory=dict)  # sha256 → why it is not an image


class PhotoIngest:
    """The ingest role of one open index (see the module docstring)."""

    def __init__(self, state: IndexState, maintenance: Maintenance) -> None:
        self.state = state
        self.maintenance = maintenance
        self._places_checked = False  # name_stored_places ran for this index

    # ------------------------------------------------------------------ files
    def add_paths(
        self,
        paths: Sequence[Path],
        metadata: Mapping[Path, dict] | None,
        *,
        progress: bool,
        checkpoint_seconds: float,
    ) -> AddReport:
        state, maintenance = self.state, self.maintenance
        report = AddReport()
        # A name that is not UTF-8 cannot be stored (indexer/image_sources.py): that file is reported, not the folder.
        unique, report.failed = split_storable(dict.fromkeys(Path(p).expanduser().resolve() for p in paths))
        meta = {Path(k).expanduser().resolve(): v for k, v in (metadata or {}).items()}
        with maintenance.writing():
            existing = state.store.by_paths([str(p) for p in unique])
            # Rows from before the photo facts (EXIF date, GPS, folder) get them from the file when it is met again;
            # rows with GPS but no place name (from before issue 36) get it from their stored position.
            refresh = state.store.missing_facts([id_ for id_, _ in existing.values()])
            self.name_stored_places()
            from tqdm.auto import tqdm  # here: a search opens the index and shows no bar (test_search_startup.py)

            bar = tqdm(total=len(unique), unit="img", desc="indexing", disable=not progress, dynamic_ncols=True)
            last_save = time.monotonic()
            size = state.settings.index.batch_size
            batches = [unique[start : start + size] for start in range(0, len(unique), size)]

            workers = self.workers()

            def read_and_prepare(batch: builtins.list[Path]) -> tuple[FileBatch, Prepared]:
                files = read_files(batch, existing, meta, state.settings.index.max_file_bytes, refresh)
                prepared = self.prepare(files.items)
                if workers > 1:
                    self.encode(prepared, threads=1)  # this worker's share of the cores: one
                return files, prepared

            # Several workers (one per core: ``workers``): each reads, hashes, decodes and encodes a batch of its own,
            # so decoding and the network overlap on every core; this thread only writes rows and vectors, in order.
            # One worker (encoders that take no per-call threads): it reads and decodes batch i+1 while the encoder
            # runs on batch i here (benchmarks/indexing-12mpx.md).
            in_flight = workers + 1 if workers > 1 else PREFETCH_BATCHES
            unsaved: builtins.list[int] = []  # ids added since the last save: undone if the next save fails
            stamps: dict[str, tuple[Stamp, str]] = {}  # what the folder watcher needs, written once all is saved
            claimed: set[int] = set()  # rows re-pointed to a moved file in this call (one file each)
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="index-decode") as pool:
                ahead = [pool.submit(read_and_prepare, batch) for batch in batches[:in_flight]]
                try:
                    with translated(state.folder):
                        for number, batch in enumerate(batches):
                            files, prepared = ahead.pop(0).result()
                            if number + in_flight < len(batches):
                                ahead.append(pool.submit(read_and_prepare, batches[number + in_flight]))
                            report.failed += files.failed
                            report.skipped += files.skipped
                            if files.updates:
                                state.store.update_many(files.updates)
                            if files.facts:
                                self.name_places([facts for _, facts in files.facts])
                                state.store.set_facts(files.facts)
                            fresh, moved = self.moved_files(files.items, claimed)
                            report.moved_ids += [id_ for id_, _, _ in moved]
                            records = self.ingest_batch(fresh, report, prepared)
                            unsaved += [r.id for r in records]
                            report.added += len(records)
                            kept = [
                                *files.unchanged,
                                *((p, sha) for _, p, sha in moved),
                                *((r.path, r.sha256) for r in records),
                            ]
                            stamps.update(
                                {path: (files.stamps[path], sha) for path, sha in kept if path in files.stamps}
                            )
                            bar.update(len(batch))
                            bar.set_postfix(added=report.added, skipped=report.skipped, failed=len(report.failed))
                            if time.monotonic() - last_save > checkpoint_seconds:
                                maintenance.persist()
                                unsaved.clear()
                                last_save = time.monotonic()
                        maintenance.persist()
                        unsaved.clear()
                    self.record_stamps(stamps)
                except (DiskFullError, BackendUnavailableError):
                    # No space (or no backend) for this part: take back its rows and vectors now, so the index on
                    # disk and in SQL is the last saved state; the features are cached, a re-run redoes it fast.
                    report.added -= len(unsaved)
                    self.roll_back(unsaved)
                    raise
                except BaseException:
                    maintenance.persist()  # Ctrl-C: everything committed so far is kept
                    raise
                finally:
                    for future in ahead:
                        future.cancel()
                    bar.close()
            maintenance.change_kind_if_grown(progress)
        return report

    # ------------------------------------------------------------------ uploads
    def add_upload(self, data: bytes, filename: str, metadata: dict | None = None) -> tuple[ImageRecord, bool]:
        """The record of the uploaded bytes and whether this call created it (False: the same bytes were indexed
        already, by an earlier or a concurrent upload). Decided under the write lock by what this call inserted,
        so of any number of concurrent identical uploads exactly one is told it created the photo."""
        state, maintenance = self.state, self.maintenance
        # Decoded as `index add` decodes a file (reduced to decode_side): the same photo gets the same vector.
        image = decode_image(data, max_pixels=state.settings.index.max_image_pixels, min_side=self.decode_side())
        sha = content_hash(data)
        meta = dict(metadata or {})
        meta["extra"] = {**(meta.get("extra") or {}), "filename": filename}
        report = AddReport()
        with maintenance.writing():  # checked under the lock: two uploads of the same photo make one record
            existing = state.store.by_sha256(sha)
            if existing is not None:
                if not lost_upload(state.folder, existing.path):
                    return existing, False
                # A failed write whose rows could not be taken back (the database failed too) left this row:
                # returning it would hand out a photo that is neither served nor searchable.
                log.warning("replacing an upload whose file is missing", extra={"id": existing.id})
                maintenance.remove([existing.id])
            # Absolute: the record must stay valid whatever the working directory of the next process. The suffix
            # is the detected format's, never the client's name (a PPM called evil.html is stored as .ppm).
            target = state.folder.resolve() / UPLOADS_DIR / f"{sha}{upload_suffix(data)}"
            # One transaction per photo across the file, the row and the vector: on any failure (no space, the
            # database or the vector server down) all three are undone before the error reaches the caller, so a
            # retry creates the photo.
            records: builtins.list[ImageRecord] = []
            done = False
            try:
                with translated(state.folder, len(data), "upload"):
                    atomic_write_bytes(target, data)
                    item = Item(target, data, sha, None, meta)  # the size from the header: the decode's is reduced
                    records = self.ingest_batch([item], report, self.prepare([item], {sha: image}))
                    maintenance.persist()
                done = True
            finally:
                if not (done and records):
                    # Not indexed: leave no orphan file behind. Removed before the rows: on a full disk the row
                    # delete needs room in the database's log, and this file is what took it.
                    target.unlink(missing_ok=True)
                if not done:
                    self.roll_back([r.id for r in records])
        if not records:
            raise ImageDecodeError(report.failed[0][1] if report.failed else "the image could not be indexed")
        return records[0], True

    # ------------------------------------------------------------------ the steps
    def prepare(self, items: builtins.list[Item], decoded: dict[str, Image.Image] | None = None) -> Prepared:
        """The CPU work before the network for a batch: cached features, else decode + ``encoder.prepare``.
        Thread-safe: ``add_paths`` runs it in a worker thread for the next batch while this one is encoded."""
        state = self.state
        prepared = Prepared(state.feature_cache().get_many([item.sha256 for item in items]))
        for item in items:
            sha = item.sha256
            if sha in prepared.features or sha in prepared.inputs or sha in prepared.broken:
                continue
            image = (decoded or {}).get(sha)
            if image is None:
                try:
                    image = decode_image(
                        item.data, max_pixels=state.settings.index.max_image_pixels, min_side=self.decode_side()
                    )
                except ImageDecodeError as exc:
                    prepared.broken[sha] = str(exc)
                    continue
            # item.size stays as given: a reduced decode's size is not the photo's (read from the header at insert)
            prepared.inputs[sha] = state.encoder.prepare(image)
            if state.settings.index.index_thumbnails:
                self._thumbnail(sha, image)
        return prepared

    def encode(self, prepared: Prepared, threads: int | None = None) -> dict[str, np.ndarray]:
        """The network on the prepared inputs: features into the cache (before any row refers to them) and into
        ``prepared.features``, whose inputs are dropped. Thread-safe: with several ingest workers each runs it on
        the batch it decoded, on ``threads`` intra-op threads (:meth:`workers`)."""
        state = self.state
        todo = [sha for sha in prepared.inputs if sha not in prepared.features]
        fresh: dict[str, np.ndarray] = {}
        if todo:
            computed = state.loaded_encoder().predict_prepared([prepared.inputs[sha] for sha in todo], threads=threads)
            fresh = dict(zip(todo, computed, strict=True))
            state.feature_cache().put_many(fresh)
            prepared.features.update(fresh)
        prepared.inputs.clear()  # the pixels of a batch are not kept once encoded
        return fresh

    def workers(self) -> int:
        """Threads that read, hash, decode and encode batches side by side in ``add_paths``. One per core when the
        encoder runs a call on one thread (``per_call_threads``): each worker then keeps one core busy with its own
        batch, decoding included, at the least CPU per photo (indexer/encoders/efficientnet_onnx.py). Otherwise
        one, which decodes the next batch while the encoder runs over the cores on this one."""
        settings = self.state.settings.index
        if settings.indexing_workers:
            return settings.indexing_workers
        return available_cores() if self.state.encoder.per_call_threads else 1

    def decode_side(self) -> int | None:
        """The short side photos are decoded down to (``IndexSettings.decode_side``: the encoder's, or the
        thumbnail's when larger; re-encoding decodes to the same, so it gives the same vectors)."""
        return self.state.settings.index.decode_side(self.state.encoder.decode_side)

    def _thumbnail(self, sha: str, image: Image.Image) -> None:
        settings = self.state.settings
        try:
            write_thumbnail(settings.resolved_cache_dir, sha, image, settings.index.thumbnail_size)
        except OSError as exc:  # a cache: indexing goes on, the service makes it on request
            log.warning("thumbnail not written", extra={"sha256": sha, "error": str(exc)})

    def ingest_batch(
        self, items: builtins.list[Item], report: AddReport, prepared: Prepared
    ) -> builtins.list[ImageRecord]:
        """Features (cache or encoder) → rows (one transaction) → vectors. Returns the new records."""
        if not items:
            return []
        state = self.state
        features, broken = dict(prepared.features), prepared.broken
        features.update(self.encode(prepared))
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
        rows = [item.to_new_image() for item in good]
        self.name_places(rows)
        records = state.store.insert(rows, replace_ids=replaced)
        matrix = state.space.apply(np.stack([features[item.sha256] for item in good]))
        try:
            state.add_vectors([r.id for r in records], matrix, replaced)
        except BaseException:
            # The vector backend failed (a Milvus outage): a row may only exist with its vector, so take the rows
            # back now rather than at the next start (the replaced rows stay gone: re-adding the file restores it).
            self.roll_back([r.id for r in records], vectors_added=False)
            raise
        return records

    def moved_files(
        self, items: builtins.list[Item], claimed: set[int]
    ) -> tuple[builtins.list[Item], builtins.list[tuple[int, str, str]]]:
        """Files new under their path whose content an indexed photo has at a path that no longer exists: that
        photo was moved or renamed (or deleted and restored elsewhere). Its row is re-pointed to the new path —
        same id, vector and user metadata, so links to it (``?photo=<id>``) survive (issue 36) — instead of a new
        photo being made. Returns the items still to ingest and ``(id, path, sha256)`` of the moved ones."""
        candidates = [item for item in items if item.replaces is None]
        if not candidates:
            return items, []
        rows = self.state.store.rows_with_sha256([item.sha256 for item in candidates])
        moves: builtins.list[tuple[int, str, str]] = []
        rest: builtins.list[Item] = []
        for item in items:
            found = item.replaces is None and next(
                (
                    id_
                    for id_, old_path in rows.get(item.sha256, [])
                    if id_ not in claimed and old_path != str(item.path) and not os.path.lexists(old_path)
                ),
                None,
            )
            if found:
                claimed.add(found)
                moves.append((found, str(item.path), str(item.path.parent)))
            else:
                rest.append(item)
        if moves:
            self.state.store.move(moves)
            log.info("photos moved or renamed keep their ids", extra={"moved": len(moves)})
        shas = {str(item.path): item.sha256 for item in items}
        return rest, [(id_, path, shas[path]) for id_, path, _ in moves]

    def record_stamps(self, stamps: dict[str, tuple[Stamp, str]]) -> None:
        """What the folder watcher needs not to read these files again (a catch-up after ``index add``), written
        once the index has saved them; a hint only (indexer/file_stamps.py), so a failure to write it is logged."""
        if not stamps:
            return
        try:
            kept = FileStamps(self.state.folder)
            try:
                kept.put_many(stamps)
            finally:
                kept.close()
        except sqlite3.Error as exc:
            log.warning("file stamps not written", extra={"error": str(exc)})

    def name_places(self, rows: Sequence[PhotoFacts | dict[str, Any]]) -> None:
        """Fill the city, region and country of the rows (facts, or fact columns) that have a GPS position, from the
        offline gazetteer (:mod:`indexer.places`; read once per process, ~30 µs a photo after that)."""
        located = [
            (row, (fact(row, "latitude"), fact(row, "longitude")))
            for row in rows
            if fact(row, "latitude") is not None and fact(row, "longitude") is not None
        ]
        if not located:
            return
        places = gazetteer(self.state.settings.resolved_cache_dir).name([position for _, position in located])
        for (row, _), place in zip(located, places, strict=True):
            for name, value in place.columns().items():
                if isinstance(row, dict):
                    row[name] = value
                else:
                    setattr(row, name, value)

    def name_stored_places(self) -> None:
        """Place names for stored rows that have a GPS position and none (indexed before issue 36): once per open
        index (a watcher adds batch after batch; the rows it adds are named as they come)."""
        if self._places_checked:
            return
        self._places_checked = True
        unnamed = self.state.store.unnamed_positions()
        if not unnamed:
            return
        columns: list[dict[str, Any]] = [{"latitude": lat, "longitude": lon} for _, lat, lon in unnamed]
        self.name_places(columns)
        named = [
            (id_, {k: v for k, v in row.items() if k in ("city", "region", "country")})
            for (id_, _, _), row in zip(unnamed, columns, strict=True)
        ]
        self.state.store.set_facts([change for change in named if any(change[1].values())])

    def roll_back(self, ids: Sequence[int], vectors_added: bool = True) -> None:
        """Undo rows (and their vectors, when ``vectors_added``) whose write could not be completed; best effort:
        what cannot be undone now (the database is down too) is reconciled when the index is next opened."""
        if not ids:
            return
        state = self.state
        if vectors_added:
            try:
                state.remove_vectors(list(ids))
            except Exception as exc:  # the vector backend is what failed; the reconcile drops them
                log.warning(
                    "could not remove vectors of a failed write", extra={"ids": list(ids)[:20], "error": str(exc)}
                )
        try:
            state.store.delete(list(ids))
        except Exception as exc:
            log.error("could not delete rows of a failed write", extra={"ids": list(ids)[:20], "error": str(exc)})
