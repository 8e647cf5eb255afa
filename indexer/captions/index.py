"""``CaptionIndex``: captions in SQL (:mod:`indexer.captions.store`) + one FAISS file per language
(:mod:`indexer.captions.files`); see the package docstring for the layout and the commit protocol."""

from __future__ import annotations

import builtins
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from indexer.caption_records import Caption
from indexer.captions.files import FLAT, CaptionFiles
from indexer.captions.store import CaptionStore
from indexer.sentence_cache import cached_sentences
from indexer.settings import Settings
from indexer.store.failures import DiskFullError, translated
from indexer.store.locks import IndexBusyError, process_lock
from indexer.store.sql import redact_url, sqlite_url
from indexer.store.vectors import VectorIndex
from indexer.tower import TextEmbedder, tower_fingerprint

log = logging.getLogger(__name__)

DB_NAME = "captions.sqlite"
LOCK_NAME = ".write.lock"
_EMBED_BATCH = 4096  # sentences per pass through the tower: bounds the activations' memory


@dataclass
class CaptionHit:
    id: int
    score: float
    lang: str
    text: str
    image: str | None
    source: str | None


class CaptionIndex:
    def __init__(
        self, folder: Path, embedder: TextEmbedder, cache_dir: Path | None = None, database_url: str | None = None
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.cache_dir = cache_dir
        self.dim = embedder.dim
        self.fingerprint = tower_fingerprint(embedder.tower, embedder.bridge)
        self.store = CaptionStore(database_url or sqlite_url(self.folder / DB_NAME))
        self.files = CaptionFiles(self.folder, self.dim)
        self._write_mutex = threading.Lock()  # one writer per process; the flock keeps out other processes
        # Replaced as a whole, never mutated: a search reads one consistent set of per-language indexes.
        self._indexes: dict[str, VectorIndex] = {}
        self.read_only_reason: str | None = None  # set when opened after a failed save (see open)

    # ------------------------------------------------------------------ opening
    @classmethod
    def from_settings(cls, settings: Settings, embedder: TextEmbedder) -> CaptionIndex:
        """The configured caption index (``POLYGLOT_CAPTIONS_DIR``, ``POLYGLOT_CAPTIONS_DATABASE_URL``)."""
        return cls.open(
            settings.resolved_captions_dir, embedder, settings.resolved_cache_dir, settings.captions_database_url
        )

    @classmethod
    def open(
        cls, folder: Path, embedder: TextEmbedder, cache_dir: Path | None = None, database_url: str | None = None
    ) -> CaptionIndex:
        """Open (or create) the caption index; rebuild languages whose vectors are missing, partial or stale.

        ``database_url``: where the ``captions`` table lives (default: ``captions.sqlite`` in ``folder``).
        """
        index = cls(folder, embedder, cache_dir, database_url)
        try:
            try:
                with index._writer():
                    index.files.remove_leftovers()
                    index._reconcile(persist=True)
            except IndexBusyError:
                # Another process is writing and repairs the files itself; build what it has committed in memory.
                log.info("caption index busy: reconciling in memory only", extra={"folder": str(index.folder)})
                index._reconcile(persist=False)
            except DiskFullError as exc:
                # The repaired files could not be written: serve the repair from memory, read-only; the next
                # write retries (the files on disk are the last good state, written atomically).
                index.read_only_reason = str(exc)
                log.warning("caption index opened read-only: its repair could not be saved", extra={"reason": str(exc)})
                index._reconcile(persist=False)
        except BaseException:
            index.close()
            raise
        return index

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ reading
    def languages(self) -> builtins.list[str]:
        """Languages with captions to search (as loaded or written by this object)."""
        return sorted(self._indexes)

    def vectors(self, lang: str) -> VectorIndex | None:
        """The language's current vectors (ids = SQL ids). A write swaps in a new object, never edits this one, so
        its identity tells a reader whether the language changed since it last looked."""
        return self._indexes.get(lang)

    def count(self, lang: str | None = None) -> int:
        return self.store.count(lang)

    def __len__(self) -> int:
        return self.count()

    def stats(self) -> dict[str, Any]:
        per_lang = self.store.counts()
        return {
            "count": sum(per_lang.values()),
            "languages": per_lang,
            "dim": self.dim,
            "folder": str(self.folder),
            "database": redact_url(self.store.url),
        }

    def list(self, lang: str | None = None, offset: int = 0, limit: int = 100) -> builtins.list[CaptionHit]:
        return [CaptionHit(r.id, 0.0, r.lang, r.text, r.image, r.source) for r in self.store.page(lang, offset, limit)]

    def search(self, vector: np.ndarray, langs: Sequence[str], k: int) -> dict[str, builtins.list[CaptionHit]]:
        """Best ``k`` captions per requested language for one unit vector (languages with none: empty)."""
        query = np.ascontiguousarray(np.atleast_2d(vector), dtype=np.float32)
        if query.shape[1] != self.dim:
            raise ValueError(f"query vector has {query.shape[1]} dimensions; captions are stored in {self.dim}")
        indexes = self._indexes  # one reference: a concurrent writer swaps in a new dict, never edits this one
        found: dict[str, builtins.list[tuple[int, float]]] = {}
        for lang in langs:
            index = indexes.get(lang)
            result = index.search(query, k)[0] if index is not None else None
            found[lang] = list(zip(result.ids, result.scores, strict=True)) if result is not None else []
        # A row removed since the FAISS lookup (a concurrent remove) is simply left out.
        rows = self.store.get_many([i for hits in found.values() for i, _ in hits])
        return {
            lang: [CaptionHit(i, s, r.lang, r.text, r.image, r.source) for i, s in hits if (r := rows.get(i))]
            for lang, hits in found.items()
        }

    # ------------------------------------------------------------------ writing
    def add(self, captions: Sequence[Caption], progress: Callable[[int], object] | None = None) -> int:
        """Index captions not yet present (same language and text); returns how many were added."""
        with self._writer():
            todo = self.store.missing(captions)
            by_lang: dict[str, builtins.list[Caption]] = defaultdict(builtins.list)
            for caption in todo:
                by_lang[caption.lang].append(caption)
            # Embedded before anything is committed: an encoder failure leaves the index as it was.
            vectors = {
                (lang, c.text): row
                for lang, items in by_lang.items()
                for c, row in zip(items, self._embed([c.text for c in items], lang, progress), strict=True)
            }
            fresh = self.store.insert(todo)  # one transaction
            added: dict[str, builtins.list[tuple[int, str]]] = defaultdict(builtins.list)
            for id_, lang, text in fresh:
                added[lang].append((id_, text))
            before = dict(self._indexes)
            try:
                for lang, items in sorted(added.items()):
                    updated = self._copy(lang)
                    updated.add([i for i, _ in items], np.stack([vectors[(lang, text)] for _, text in items]))
                    self._commit_lang(lang, updated)
                self._write_sidecar()
            except BaseException:
                # A language file could not be written (no space): take the rows back so that SQL and the files
                # agree now, not at the next open; the sentence embeddings are cached for the retry.
                committed = [lang for lang in added if self._indexes.get(lang) is not before.get(lang)]
                self._indexes = before
                self.store.delete_ids([i for i, _, _ in fresh])
                for lang in committed:  # best effort: an old file is no larger; the next open repairs the rest
                    try:
                        self.files.save(lang, before.get(lang))
                    except OSError:
                        log.warning("caption file left ahead of SQL; repaired at the next open", extra={"lang": lang})
                raise
            self.read_only_reason = None
            return len(fresh)

    def remove(self, lang: str | None = None, source: str | None = None, image: str | None = None) -> int:
        """Delete captions matching every given filter (at least one filter is required)."""
        with self._writer():
            doomed = self.store.delete(lang=lang, source=source, image=image)  # one transaction
            for code in sorted({code for _, code in doomed}):
                updated = self._copy(code)
                updated.remove([i for i, c in doomed if c == code])
                self._commit_lang(code, updated if len(updated) else None)
            self._write_sidecar()
            return len(doomed)

    # ------------------------------------------------------------------ internals
    @contextmanager
    def _writer(self) -> Iterator[None]:
        with self._write_mutex, process_lock(self.folder / LOCK_NAME), translated(self.folder, what="caption index"):
            if self.read_only_reason is not None:  # retry the repair that could not be saved when opened
                self._reconcile(persist=True)
                self.read_only_reason = None
            yield

    def _copy(self, lang: str) -> VectorIndex:
        """A private copy of a language's index to change (readers keep using the current one meanwhile)."""
        current = self._indexes.get(lang)
        return current.copy() if current is not None else VectorIndex.create(self.dim, "flat", FLAT)

    def _commit_lang(self, lang: str, index: VectorIndex | None) -> None:
        """Write a language's file atomically, then swap it in (``None``: no captions left in it)."""
        self.files.save(lang, index)
        swapped = {code: current for code, current in self._indexes.items() if code != lang}
        if index is not None:
            swapped[lang] = index
        self._indexes = swapped

    def _write_sidecar(self) -> None:
        counts = {lang: len(index) for lang, index in self._indexes.items()}
        self.files.write_sidecar(self.fingerprint, counts, redact_url(self.store.url))

    def _reconcile(self, persist: bool) -> None:
        """Make every language's vectors agree with SQL: rebuild those missing, partial, stale or of another tower.

        ``persist``: also rewrite the repaired files and the sidecar, and delete files of languages SQL no longer has
        (only while holding the write lock).
        """
        sidecar = self.files.read_sidecar()
        stale = sidecar.get("fingerprint") != self.fingerprint or sidecar.get("dim") != self.dim
        indexes: dict[str, VectorIndex] = {}
        rebuilt = []
        for lang, ids in self.store.ids_by_lang().items():
            loaded = None if stale else self.files.load(lang)
            if loaded is None or not np.array_equal(np.sort(loaded.ids()), np.asarray(ids, dtype=np.int64)):
                loaded = self._build(lang)
                rebuilt.append(lang)
                if persist:
                    self.files.save(lang, loaded)
            indexes[lang] = loaded
        self._indexes = indexes
        if rebuilt:
            log.warning("caption vectors rebuilt from SQL", extra={"languages": rebuilt, "tower_changed": stale})
        if persist:
            for lang in set(self.files.languages()) - set(indexes):
                self.files.save(lang, None)  # every caption of it was removed, the file was not deleted yet
            self._write_sidecar()

    def _build(self, lang: str) -> VectorIndex:
        ids, texts = self.store.texts(lang)
        return VectorIndex.build(ids, self._embed(texts, lang), "flat", FLAT)

    def _embed(self, texts: Sequence[str], lang: str, progress: Callable[[int], object] | None = None) -> np.ndarray:
        """Unit vectors of ``texts`` in the image space; sentence embeddings through the features cache."""
        encoder = self.embedder.encoder
        if not encoder.loaded:
            encoder.load()
        if self.cache_dir is None or not encoder.dim:
            sentences = encoder.predict(texts)
            if progress is not None:
                progress(len(texts))
        else:
            sentences = cached_sentences(encoder, texts, self.cache_dir, progress=progress)
        out = [
            self.embedder.embed_sentences(sentences[s : s + _EMBED_BATCH], lang)
            for s in range(0, len(sentences), _EMBED_BATCH)
        ]
        return np.ascontiguousarray(np.concatenate(out) if out else np.zeros((0, self.dim)), dtype=np.float32)
