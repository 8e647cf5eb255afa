"""Folders as the API shows them (issue 59): relative to the library root that holds them, never the server's
absolute path.

A library root is a folder the service serves photos from (:meth:`app.service_settings.ServiceSettings.served_roots`:
POLYGLOT_ALLOWED_ROOTS, else the served photo folder and the watched folders; the index's uploads). A photo's
folder is shown from the deepest root that holds it, starting with that root's own name: ``/home/ana/Photos/2024/
Lisbon`` under the root ``/home/ana/Photos`` is ``Photos/2024/Lisbon``, a photo in the root itself ``Photos``, an
upload ``uploads``. A folder under no root (a library indexed by ``polyglot index add`` and served without a photo
folder) is shown the same way from the folders' common ancestor — the library's root in effect; where the indexed
folders share none but the file system's root, by its own name alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import PurePath

ROOT_NAMES_SECONDS = 30.0  # how long the indexed folders' common ancestor is reused (a library grows)


class LibraryFolders:
    def __init__(
        self, roots: Sequence[PurePath], indexed: Callable[[], list[str]], ttl: float = ROOT_NAMES_SECONDS
    ) -> None:
        # Deepest first: a watched folder inside the served one names its photos from itself.
        self.roots = sorted({PurePath(root) for root in roots}, key=lambda root: len(root.parts), reverse=True)
        self._indexed = indexed
        self._ttl = ttl
        self._common: tuple[float, PurePath | None] | None = None
        self._lock = threading.Lock()

    def shown(self, folder: str | None) -> str | None:
        """``folder`` (a server path) as the API shows it (module docstring); None stays None."""
        if not folder:
            return folder
        path = PurePath(folder)
        if not path.is_absolute():
            return path.as_posix()
        for root in self.roots:
            if path == root or root in path.parents:
                return _from(root, path)
        common = self._indexed_root()
        if common is not None and (path == common or common in path.parents):
            return _from(common, path)
        return path.name or path.as_posix()

    def _indexed_root(self) -> PurePath | None:
        now = time.monotonic()
        with self._lock:
            if self._common is not None and self._common[0] > now:
                return self._common[1]
        folders = [folder for folder in self._indexed() if folder.startswith("/")]
        common: PurePath | None = None
        if folders:
            try:
                found = PurePath(os.path.commonpath(folders))
            except ValueError:  # mixed drives or kinds of path: no common ancestor
                found = None
            common = found if found is not None and len(found.parts) > 1 else None
        with self._lock:
            self._common = (now + self._ttl, common)
        return common


def _from(root: PurePath, path: PurePath) -> str:
    """``path`` from ``root``, starting with the root's name (a file system root has none: the path without it)."""
    relative = path.relative_to(root)
    return PurePath(root.name, relative).as_posix() if root.name else relative.as_posix() or path.as_posix()
