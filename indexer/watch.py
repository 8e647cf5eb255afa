"""Keep an image index in sync with folders as files change (``polyglot index watch``, ``serve --watch``).

:class:`FolderWatcher` listens to the file system (watchdog: inotify on Linux, FSEvents, ReadDirectoryChangesW)
and applies what changed in batches, once the folders have been quiet for ``settle`` seconds (a camera import
or a copy writes a file in many steps; a half-written file is never indexed twice):

* a new or changed image file → ``ImageIndex.add_paths`` (its content hash decides: an unchanged file is
  skipped, a changed one replaces its row and vector, as with ``polyglot index add``);
* a deleted file, or every indexed file below a deleted folder → ``ImageIndex.remove``;
* a moved or renamed file or folder → its rows re-pointed to the new paths: the same ids, vectors and user
  metadata, so links to the photos survive (issue 36; ``add_paths`` finds the row by content hash whose file is
  gone); rows still at a gone path afterwards are removed.

Every batch goes through the index's own crash-safe writes (one SQL transaction per batch, vectors persisted
atomically), so a watcher killed at any point leaves an index that ``open`` reconciles; on start it first
catches up with what changed while it was not running (:meth:`FolderWatcher.sync`: new files added, rows of
vanished files removed). That catch-up reads only new and changed files: a file whose size and modification
time are those the watcher recorded when it last indexed it (:mod:`indexer.file_stamps`), and whose row still
has the content hash it had then, is not read again. ``polyglot index add`` records the same stamps
(``ImageIndex.add_paths``), so the first watcher after it reads nothing it read.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from indexer.file_stamps import FileStamps, Stamp
from indexer.image_index import ImageIndex
from indexer.image_sources import expand_sources, split_storable, storable
from indexer.images import is_image_path
from indexer.store.locks import IndexBusyError

log = logging.getLogger(__name__)


@dataclass
class SyncReport:
    added: int = 0
    removed: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    moved: int = 0  # files under a new path that kept their photo's id
    found: int = 0  # catch-up (sync): image files in the folders …
    read: int = 0  # … and how many of them were read (new or changed since the watcher last saw them)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.failed or self.moved)


class _Collector(FileSystemEventHandler):
    """Paths touched by events, kept until the watcher takes them (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.paths: set[Path] = set()
        self.last_event = 0.0

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        with self.lock:
            for raw in (event.src_path, getattr(event, "dest_path", "")):
                if raw:
                    self.paths.add(Path(raw.decode() if isinstance(raw, bytes) else raw))
            self.last_event = time.monotonic()

    def take(self, settle: float) -> set[Path]:
        with self.lock:
            if not self.paths or time.monotonic() - self.last_event < settle:
                return set()
            taken, self.paths = self.paths, set()
            return taken


class FolderWatcher:
    """Watch ``folders`` and mirror their image files into ``index`` (see the module docstring)."""

    def __init__(
        self,
        index: ImageIndex,
        folders: Sequence[Path],
        *,
        settle: float = 1.0,
        on_change: Callable[[SyncReport, list[int]], None] | None = None,  # (report, ids removed or moved)
    ) -> None:
        self.index = index
        self.folders = [Path(folder).expanduser().resolve() for folder in folders]
        for folder in self.folders:
            if not folder.is_dir():
                raise NotADirectoryError(f"{folder}: not a folder")
        self.settle = settle
        self.on_change = on_change
        self._collector = _Collector()
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._stamps = FileStamps(index.folder)
        self.caught_up: SyncReport | None = None  # the last catch-up's report (`polyglot index watch` prints it)

    # ------------------------------------------------------------------ running
    def start(self, *, catch_up: bool = True, background: bool = False) -> FolderWatcher:
        """Start listening, then catch up with changes made while nobody watched (in the watcher thread when
        ``background``: the service does not wait for it), and apply events in a thread."""
        observer = Observer()
        for folder in self.folders:
            observer.schedule(self._collector, str(folder), recursive=True)
        observer.start()  # before the catch-up: nothing that happens during it is missed
        self._observer = observer
        if catch_up and not background:
            self.sync()
        self._thread = threading.Thread(
            target=self._loop, args=(catch_up and background,), name="folder-watcher", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=10)
        if self._thread is not None:
            self._thread.join(timeout=60)
        self._stamps.close()

    def __enter__(self) -> FolderWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _loop(self, catch_up: bool) -> None:
        if catch_up:
            try:
                self.sync()
            except Exception:
                log.exception("folder watcher: catching up failed")
        while not self._stop.wait(min(0.25, self.settle / 2)):
            self.poll()

    def poll(self) -> SyncReport:
        """Apply the changes that have settled (called by the watcher thread; tests may call it directly)."""
        paths = self._collector.take(self.settle)
        if not paths:
            return SyncReport()
        try:
            return self.apply(paths)
        except IndexBusyError:
            with self._collector.lock:  # another process is writing: try these again on the next round
                self._collector.paths |= paths
            return SyncReport()
        except Exception:  # a watcher thread must survive a bad batch; the files are retried at the next sync
            log.exception("folder watcher: a batch of changes failed")
            return SyncReport()

    # ------------------------------------------------------------------ changes
    def apply(self, paths: set[Path]) -> SyncReport:
        """Bring the index in line with the current state of ``paths`` (files or folders, existing or gone)."""
        present: list[Path] = []
        gone: list[Path] = []
        refused: list[tuple[str, str]] = []
        for path in paths:
            if path.is_dir():
                below = expand_sources([path])  # a folder moved or copied in: everything below it
                present += below.paths
                refused += below.refused
            elif path.is_file():
                if is_image_path(path) and not path.name.startswith("."):
                    present.append(path.resolve())
            else:
                gone.append(path)
        present, odd_names = split_storable(present)  # names that are not UTF-8: reported, never stored
        refused += odd_names
        gone = [path for path in gone if storable(path)]  # such a name was never indexed
        report = SyncReport()
        report.failed = refused
        moved_ids: list[int] = []
        # New paths first: a file moved or renamed takes its row with it (same id: indexer/store/photo_ingest.py),
        # so only the rows still at a gone path are removed after.
        if present:
            added = self.index.add_paths(sorted(present), progress=False)
            report.added, report.failed, report.moved = added.added, refused + added.failed, added.moved
            moved_ids = added.moved_ids
        store = self.index.store
        doomed = [found[0] for found in store.by_paths([str(p) for p in gone]).values()]
        for folder in gone:  # a deleted or moved-away folder: its rows (a file path matches nothing here)
            doomed += store.ids_under(str(folder))
        if doomed:
            report.removed = self.index.remove(sorted(set(doomed)))
        self._stamps.forget(str(path) for path in gone)
        for folder in gone:
            self._stamps.forget_under(str(folder))
        if report:
            log.info(
                "folder watcher applied changes",
                extra={"added": report.added, "removed": report.removed, "failed": len(report.failed)},
            )
            if self.on_change is not None:
                self.on_change(report, sorted({*doomed, *moved_ids}))
        return report

    def sync(self) -> SyncReport:
        """Catch up: add new and changed files of the folders, remove rows of files that are gone. Files the
        stamps say are unchanged are not read (module docstring)."""
        report = SyncReport()
        sources = expand_sources(self.folders)
        files = sources.paths
        existing = {str(path) for path in files}
        # New and changed files first: one moved or renamed while nobody watched takes its row with it (same id).
        todo = self._new_or_changed(files)
        report.found, report.read = len(files), len(todo)
        report.failed = list(sources.refused)  # names that are not UTF-8: reported, never stored
        moved_ids: list[int] = []
        if todo:
            added = self.index.add_paths(sorted(todo), progress=False)
            report.added, report.failed, report.moved = added.added, sources.refused + added.failed, added.moved
            moved_ids = added.moved_ids
        vanished = [
            (id_, path)
            for folder in self.folders
            for id_, path in self.index.store.paths_under(str(folder))
            if path not in existing
        ]
        doomed = [id_ for id_, _ in vanished]
        if doomed:
            report.removed = self.index.remove(doomed)
            self._stamps.forget(path for _, path in vanished)
        if report and self.on_change is not None:
            self.on_change(report, sorted({*doomed, *moved_ids}))
        self.caught_up = report
        return report

    def _new_or_changed(self, files: Sequence[Path]) -> list[Path]:
        """The files to read: those without a stamp, whose size or modification time differ from it, or whose row
        is gone or holds another content hash than the stamp's (stamps are written by ``add_paths``, the
        watcher's and ``polyglot index add``'s alike)."""
        names = [str(path) for path in files]
        stamps = self._stamps.get_many(names)
        rows = self.index.store.by_paths(names)
        todo: list[Path] = []
        for path, name in zip(files, names, strict=True):
            stamp = _stamp(path)
            known, row = stamps.get(name), rows.get(name)
            if stamp is not None and known is not None and row is not None and known == (stamp, row[1]):
                continue
            todo.append(path)
        return todo


def _stamp(path: Path) -> Stamp | None:
    try:
        return Stamp.of(path.stat())
    except OSError:  # gone or unreadable: add_paths reports it
        return None
