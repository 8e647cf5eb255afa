"""Vocabularies on disk, versioned beside the index: ``<index_dir>/tags/<lang>/v<N>/`` + a ``current`` pointer.

Each version folder holds ``vocab.json`` (words, counts, build info) and ``vectors.npy``. A new version is
written into a hidden temporary folder and renamed into place, then ``current`` (a one-line file naming the
version) is replaced atomically, so a reader — the service reloading, a concurrent ``tags vocab list`` —
always sees a complete version. Old versions stay on disk for rollback (``--version`` selects one).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from indexer.atomic import atomic_open, atomic_write_bytes, atomic_write_json, fsync_dir
from indexer.tagging.vocabulary import Vocabulary, VocabularyError

_LANG = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8})?$")
_VERSION = re.compile(r"^v(\d+)$")
CURRENT = "current"


def check_lang(lang: str) -> str:
    code = lang.strip().lower()
    if not _LANG.match(code):
        raise VocabularyError(f"{lang!r} is not a language code (expected ISO 639-1 such as 'fr' or 'pt-br')")
    return code


class VocabularyStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    @classmethod
    def beside_index(cls, index_dir: Path) -> VocabularyStore:
        return cls(Path(index_dir) / "tags")

    def languages(self) -> list[str]:
        """Languages with a current vocabulary."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / CURRENT).is_file() and _LANG.match(p.name))

    def versions(self, lang: str) -> list[int]:
        folder = self.root / check_lang(lang)
        if not folder.is_dir():
            return []
        found = (_VERSION.match(p.name) for p in folder.iterdir() if p.is_dir())
        return sorted(int(m.group(1)) for m in found if m)

    def current_version(self, lang: str) -> int | None:
        pointer = self.root / check_lang(lang) / CURRENT
        if not pointer.is_file():
            return None
        match = _VERSION.match(pointer.read_text(encoding="utf-8").strip())
        return int(match.group(1)) if match else None

    def save(self, vocabulary: Vocabulary) -> int:
        """Write a new version and make it current; returns its number."""
        lang = check_lang(vocabulary.lang)
        folder = self.root / lang
        folder.mkdir(parents=True, exist_ok=True)
        version = max(self.versions(lang), default=0) + 1
        staging = Path(tempfile.mkdtemp(prefix=f".v{version}.", dir=folder))
        try:
            info = {**vocabulary.info, "version": version, "created": datetime.now(UTC).isoformat(timespec="seconds")}
            atomic_write_json(
                staging / "vocab.json",
                {
                    "lang": lang,
                    "words": vocabulary.words,
                    "display": vocabulary.display,
                    "counts": vocabulary.counts,
                    "info": info,
                },
            )
            with atomic_open(staging / "vectors.npy") as handle:
                np.save(handle, np.ascontiguousarray(vocabulary.vectors, dtype=np.float32))
            # A concurrent build may have taken this number: fail instead of mixing two builds.
            os.rename(staging, folder / f"v{version}")
            fsync_dir(folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        atomic_write_bytes(folder / CURRENT, f"v{version}\n".encode())
        vocabulary.info = info
        return version

    def load(self, lang: str, version: int | None = None) -> Vocabulary:
        lang = check_lang(lang)
        version = version if version is not None else self.current_version(lang)
        if version is None:
            available = ", ".join(self.languages()) or "none"
            raise VocabularyError(
                f"no tag vocabulary for {lang!r} (available: {available}); "
                f"build one with `polyglot tags vocab build --lang {lang} FILE...`"
            )
        folder = self.root / lang / f"v{version}"
        try:
            meta = json.loads((folder / "vocab.json").read_text(encoding="utf-8"))
            vectors = np.load(folder / "vectors.npy", allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise VocabularyError(f"tag vocabulary {lang} v{version} at {folder} is unreadable: {exc}") from exc
        info = dict(meta.get("info", {}))
        info.setdefault("version", version)
        display = meta.get("display")
        words = list(meta["words"])
        return Vocabulary(lang, words, [int(n) for n in meta["counts"]], vectors, info, display)

    def load_all(self) -> dict[str, Vocabulary]:
        return {lang: self.load(lang) for lang in self.languages()}
