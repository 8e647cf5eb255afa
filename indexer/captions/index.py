"""``CaptionIndex``: captions in SQL (:mod:`indexer.captions.store`) + one FAISS file per language
(:mod:`indexer.captions.files`); see the package docstring for the layout and the commit protocol.

Two processes can hold one caption index open (``polyglot serve`` and ``polyglot index captions add`` in a terminal),
each with its languages' vectors in memory. As for the image index (:mod:`indexer.store.revisions`), every save of
the sidecar under the folder's lock raises its ``revision`` and records, per language, the revision its file was
saved at (``saved_at``). A writer, holding the lock and before changing anything, reads the sidecar and loads the
language files another process saved since (never saving its older copy over them); a process that only searches
does the same when it notices a replaced sidecar, checked at most every ``REFRESH_SECONDS`` with one ``stat``.
A writer killed between its language files and the sidecar is repaired by the next open, as before."""

from __future__ import annotations

import builtins
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from indexer.caption_records import Caption
from indexer.captions.files import FLAT, SIDECAR_NAME, CaptionFiles
from indexer.captions.store import CaptionStore
from indexer.sentence_cache import cached_sentences
from indexer.settings import Settings
from indexer.store.failures import DiskFullError, translated
from indexer.store.locks import IndexBusyError, process_lock
from indexer.store.opening import IndexMismatchError
from indexer.store.revisions import Revisions, file_stamp
from indexer.store.sql import redact_url, sqlite_url
from indexer.store.vectors import VectorIndex
from indexer.tower import TextEmbedder

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
        self.fingerprint = embedder.fingerprint
        self.store = CaptionStore(database_url or sqlite_url(self.folder / DB_NAME))
        self.files = CaptionFiles(self.folder, self.dim)
        # Before the sidecar is read (open reconciles after this): a save by another process after it is noticed.
        self._revisions = Revisions(self.folder, SIDECAR_NAME)
        self._revision = 0  # the sidecar revision the vectors in memory are at
        self._saved_at: dict[str, int] = {}  # the revision of each language's file held in memory (none: reload it)
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
                with index._locked():
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
        """Languages with captions to search (as loaded or written by this object, or saved by another process:
        taken in within ``REFRESH_SECONDS``)."""
        self._take_in_saves()
        return sorted(self._indexes)

    def vectors(self, lang: str) -> VectorIndex | None:
        """The language's current vectors (ids = SQL ids). A write swaps in a new object, never edits this one, so
        its identity tells a reader whether the language changed since it last looked."""
        self._take_in_saves()
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
        self._take_in_saves()
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
                self._write_sidecar(added)
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
            changed = sorted({code for _, code in doomed})
            for code in changed:
                updated = self._copy(code)
                updated.remove([i for i, c in doomed if c == code])
                self._commit_lang(code, updated if len(updated) else None)
            self._write_sidecar(changed)
            return len(doomed)

    # ------------------------------------------------------------------ internals
    @contextmanager
    def _locked(self) -> Iterator[None]:
        """The index held for writing: in this process and across processes (``flock``)."""
        with self._write_mutex, process_lock(self.folder / LOCK_NAME), translated(self.folder, what="caption index"):
            yield

    @contextmanager
    def _writer(self) -> Iterator[None]:
        """A write session: what another process saved since this one loaded or saved is taken in first."""
        with self._locked():
            if self.read_only_reason is not None:  # retry the repair that could not be saved when opened
                self._reconcile(persist=True)  # reads every file: another process's saves included
                self.read_only_reason = None
            else:
                self._catch_up(writing=True)
            yield

    # ------------------------------------------------------------------ another process's saves
    def _take_in_saves(self) -> None:
        """Serve what another process saved within ``REFRESH_SECONDS``: between checks a clock read, at a check one
        ``stat`` of the sidecar; the sidecar and the changed languages' files are read only after another's save."""
        revisions = self._revisions
        if time.monotonic() >= revisions.next_check and revisions.replaced():
            self._refresh()

    def _refresh(self) -> None:
        """In a process that is not writing now: take in another process's save. Never raises: a save that cannot
        be read now leaves the current vectors serving, and is tried again at the next check."""
        if not self._write_mutex.acquire(blocking=False):
            self._revisions.forget()  # a write in this process takes it in under the lock; look again next time
            return
        try:
            self._catch_up(writing=False)
        except Exception as exc:
            self._revisions.forget()
            log.warning("could not take in another process's caption save", extra={"error": str(exc)})
        finally:
            self._write_mutex.release()

    def _catch_up(self, writing: bool) -> bool:
        """Load the language files another process saved since this one loaded or saved (by the sidecar's
        ``revision`` and ``saved_at``); returns whether there was anything. ``writing``: the caller holds the lock
        and is about to write, so a save in another text tower is refused (writing after it would mix towers), and a
        file named by the sidecar that cannot be read is repaired from SQL (as an open does) rather than kept."""
        stamp = file_stamp(self._revisions.path)  # before reading: a newer file is only read again later
        sidecar = self.files.read_sidecar()
        if not sidecar:
            return False  # none (or unreadable): nothing saved to take in; a writer writes a whole one
        self._revisions.seen = stamp  # whatever follows, this file is dealt with
        revision, saved_at = self.files.revisions(sidecar)
        if revision == self._revision:
            return False
        if sidecar.get("fingerprint") != self.fingerprint or sidecar.get("dim") != self.dim:
            reason = (
                f"another process saved the caption index in {self.folder} with another text tower "
                f"({sidecar.get('fingerprint')!r}, {sidecar.get('dim')} dimensions); this one uses "
                f"{self.fingerprint!r}: restart it"
            )
            if writing:
                raise IndexMismatchError(reason)
            log.warning(
                "another process changed the caption index into one this one cannot serve", extra={"reason": reason}
            )
            return False
        indexes: dict[str, VectorIndex] = {}
        held: dict[str, int] = {}
        for lang, at in saved_at.items():
            current = self._indexes.get(lang)
            if current is not None and at >= 0 and self._saved_at.get(lang) == at:  # -1: saved before revisions
                indexes[lang], held[lang] = current, at
                continue
            loaded = self.files.load(lang)
            if loaded is None:  # missing or unreadable: a crash, or (reading) a remove racing this read
                if writing:
                    self._reconcile(persist=True)
                    return True
                if current is not None:
                    indexes[lang] = current  # kept, not marked as at its revision: loaded again at the next save
                continue
            indexes[lang] = loaded
            if at >= 0:
                held[lang] = at
        self._indexes = indexes  # swapped whole: a search reads the old set or the new one
        self._revision, self._saved_at = revision, held
        log.info(
            "took in another process's caption save",
            extra={"folder": str(self.folder), "revision": revision, "counts": sidecar.get("counts")},
        )
        return True

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

    def _write_sidecar(self, changed: Iterable[str] = ()) -> None:
        """Save the sidecar under the next revision (under the lock, after :meth:`_catch_up`): the ``changed``
        languages' files, and any whose file revision this process does not know, are at this one."""
        revision = self._revision + 1
        changed = set(changed)
        saved_at = {
            lang: revision if lang in changed or lang not in self._saved_at else self._saved_at[lang]
            for lang in self._indexes
        }
        counts = {lang: len(index) for lang, index in self._indexes.items()}
        self.files.write_sidecar(self.fingerprint, counts, redact_url(self.store.url), revision, saved_at)
        self._revision, self._saved_at = revision, saved_at
        self._revisions.saw()

    def _reconcile(self, persist: bool) -> None:
        """Make every language's vectors agree with SQL: rebuild those missing, partial, stale or of another tower.

        ``persist``: also rewrite the repaired files and the sidecar, and delete files of languages SQL no longer has
        (only while holding the write lock).
        """
        sidecar = self.files.read_sidecar()
        revision, saved_at = self.files.revisions(sidecar)
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
        # Rebuilt languages are not at any saved revision: saved now (persist), or loaded again at another's save.
        self._revision = revision
        self._saved_at = {
            lang: at for lang, at in saved_at.items() if at >= 0 and lang in indexes and lang not in rebuilt
        }
        if rebuilt:
            log.warning("caption vectors rebuilt from SQL", extra={"languages": rebuilt, "tower_changed": stale})
        if persist:
            for lang in set(self.files.languages()) - set(indexes):
                self.files.save(lang, None)  # every caption of it was removed, the file was not deleted yet
            self._write_sidecar(rebuilt)

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
