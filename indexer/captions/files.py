"""The files of a caption folder: one ``<lang>.faiss`` per language and the ``captions.json`` sidecar.

Every write is atomic (tmp + fsync + rename, :mod:`indexer.atomic`), so a crash leaves the old file or the new
one. A FAISS file that is missing, unreadable or of another width reads as ``None``: the caller rebuilds it
from SQL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from indexer.atomic import atomic_write_json
from indexer.caption_records import LANG_CODE
from indexer.store.sidecar import build_info
from indexer.store.vectors import VectorIndex, VectorIndexSettings

SIDECAR_NAME = "captions.json"
FORMAT = 1
FAISS_SUFFIX = ".faiss"
# Caption indexes are always exact (flat): none of the tuning knobs apply, so none are read from the environment.
FLAT = VectorIndexSettings.model_construct()


class CaptionFiles:
    def __init__(self, folder: Path, dim: int) -> None:
        self.folder = Path(folder)
        self.dim = dim

    def path(self, lang: str) -> Path:
        return self.folder / f"{lang}{FAISS_SUFFIX}"

    def languages(self) -> list[str]:
        """Languages with a FAISS file (other files in the folder are not ours)."""
        return sorted(p.stem for p in self.folder.glob(f"*{FAISS_SUFFIX}") if LANG_CODE.match(p.stem))

    def load(self, lang: str) -> VectorIndex | None:
        path = self.path(lang)
        if not path.exists():
            return None
        try:
            index = VectorIndex.load(path, "flat", FLAT)
        except (RuntimeError, ValueError, OSError):
            return None  # unreadable or not an id-mapped index: rebuilt from SQL by the caller
        return index if index.dim == self.dim else None

    def save(self, lang: str, index: VectorIndex | None) -> None:
        """Write a language's vectors; ``None`` (no captions left) deletes its file."""
        if index is None:
            self.path(lang).unlink(missing_ok=True)
        else:
            index.save(self.path(lang))

    def remove_leftovers(self) -> None:
        """Temporary files of a writer killed inside an atomic write."""
        for stale in self.folder.glob(".*.tmp"):
            stale.unlink(missing_ok=True)

    @staticmethod
    def revisions(sidecar: dict[str, Any]) -> tuple[int, dict[str, int]]:
        """A sidecar's revision and its languages' ``saved_at`` (for one saved before revisions: 0, and every
        language it counts at -1, a revision no save has: each is loaded)."""
        revision = sidecar.get("revision")
        saved_at = sidecar.get("saved_at")
        if not isinstance(saved_at, dict):
            counts = sidecar.get("counts")
            saved_at = dict.fromkeys(counts, -1) if isinstance(counts, dict) else {}
        return (
            revision if isinstance(revision, int) else 0,
            {lang: at for lang, at in saved_at.items() if isinstance(at, int) and LANG_CODE.match(lang)},
        )

    def read_sidecar(self) -> dict[str, Any]:
        """The sidecar's content; ``{}`` when missing or unreadable (every language is then rebuilt)."""
        try:
            data = json.loads((self.folder / SIDECAR_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_sidecar(
        self, fingerprint: str, counts: dict[str, int], database: str, revision: int, saved_at: dict[str, int]
    ) -> None:
        """``revision``: this save's number (one more than the last save's, under the folder's lock); ``saved_at``:
        the revision each language's file was last saved at (what another process reloads: indexer/captions/index.py)."""
        atomic_write_json(
            self.folder / SIDECAR_NAME,
            {
                "format": FORMAT,
                "dim": self.dim,
                "fingerprint": fingerprint,
                "counts": dict(sorted(counts.items())),
                "revision": revision,
                "saved_at": dict(sorted(saved_at.items())),
                "database": database,
                "build": build_info(),
            },
        )
