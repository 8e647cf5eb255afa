"""The ``uploads/`` folder of an index: images added through the service, named ``<sha256><ext>``.

A writer killed between writing an upload and committing its row (kill -9 during an admin ``POST /images``)
leaves a file no row names; :func:`remove_orphan_uploads` runs when an index is opened (under the write lock, with
the FAISS/SQL reconciliation) and deletes such files.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from indexer.store.metadata import MetadataStore

log = logging.getLogger("indexer.image_index")  # logged under the public class's module

UPLOADS_DIR = "uploads"
_UPLOAD_NAME = re.compile(r"([0-9a-f]{64})\.[a-z0-9]+")  # <sha256><ext>, as ImageIndex.add_image_bytes names them


def remove_orphan_uploads(folder: Path, store: MetadataStore) -> list[Path]:
    """Delete the upload files in ``folder`` that no image row names, and half-written ``.tmp`` files; returns them.

    Removed rather than adopted: the client never got its 201, so nothing refers to the file, and it will send it
    again with the title, caption and tags that adopting could not recover. Kept: files whose content a row has
    under another path (an index folder moved or restored elsewhere: rows keep absolute paths, and these are
    those rows' bytes), and files not named the way uploads are (not ours to delete).
    """
    folder = folder.resolve()
    if not folder.is_dir():
        return []
    files = [path for path in folder.iterdir() if path.is_file()]
    stale = [path for path in files if path.name.startswith(".") and path.name.endswith(".tmp")]
    named = {str(path): match[1] for path in files if (match := _UPLOAD_NAME.fullmatch(path.name))}
    claimed = store.by_paths(list(named))
    unclaimed = {path: sha for path, sha in named.items() if path not in claimed}
    known = store.known_sha256(list(unclaimed.values()))
    doomed = stale + [Path(path) for path, sha in unclaimed.items() if sha not in known]
    for path in doomed:
        path.unlink(missing_ok=True)
    if doomed:
        log.warning(
            "removed uploads no image refers to (a writer was killed mid-upload)",
            extra={"files": [path.name for path in doomed][:20], "count": len(doomed)},
        )
    return doomed


def lost_upload(index_folder: Path, path: str) -> bool:
    """Whether ``path`` (a row's) names an upload of the index in ``index_folder`` whose file is gone: what a failed
    write whose rows could not be taken back left (issue 34). Such a row is replaced by the next upload of the same
    bytes, never handed back (it is neither served nor searchable)."""
    stored = Path(path)
    return stored.parent == (index_folder / UPLOADS_DIR).resolve() and not stored.is_file()
