"""``polyglot serve --watch``: the service keeps its index in sync with its folders (:mod:`indexer.watch`)."""

from __future__ import annotations

from app.engine import Engine
from indexer.watch import FolderWatcher, SyncReport

__all__ = ["FolderWatcher", "start_watcher"]


def start_watcher(engine: Engine) -> FolderWatcher:
    """Watch ``POLYGLOT_WATCH_DIRS`` into the service's own index object: changes are searchable at once (no
    second process, no reload). Catching up with what changed while the service was down runs in the watcher's
    thread: the service answers meanwhile."""

    def forget(_report: SyncReport, changed: list[int]) -> None:
        engine.forget(changed)  # result pages must not show cached metadata of removed or moved images

    watcher = FolderWatcher(
        engine.images,
        engine.settings.index.watch_dirs,
        settle=engine.settings.index.watch_settle_seconds,
        on_change=forget,
    )
    return watcher.start(background=True)
