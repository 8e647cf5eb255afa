"""The tag vocabularies that ship with the service: ``indexer/assets/tags/<lang>.tsv``, words only, embedded by the
served text side the first time a language is asked for (or at set-up: ``polyglot tags vocab embed``).

A line of ``<lang>.tsv`` is the tag as shown, then its English source words, tab-separated (the first is the one
the tag translates; built by ``polyglot tags vocab ship``, :mod:`training.tag_vocab`). The vectors are cached in
``CACHE_DIR/tag-vectors/<fingerprint>/<lang>-<sha>.npy`` (float16): keyed by the text side's fingerprint, so a
retrained student embeds each language once more, and by the word file's digest, so a rebuilt file is never read
with another file's vectors. Until the cache is there a language costs one embedding (seconds: thousands of short
words), done once per process under a per-language lock.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Protocol

import numpy as np

from indexer.asset_paths import SHIPPED_TAGS
from indexer.atomic import atomic_open
from indexer.tagging.text import normalise_text
from indexer.tagging.vocabulary import Vocabulary, VocabularyError
from indexer.unit import unit_rows

log = logging.getLogger(__name__)
BATCH = 512


def shipped_languages(folder: Path = SHIPPED_TAGS) -> list[str]:
    """The languages with a shipped word file (no embedding, no model: a directory listing)."""
    return sorted(path.stem for path in Path(folder).glob("*.tsv")) if Path(folder).is_dir() else []


class TextEmbedding(Protocol):
    def embed(self, texts: Sequence[str], langs: str | None = None) -> np.ndarray: ...


class ShippedWords:
    """One language's word file: shown forms, match keys (lower case), English sources."""

    def __init__(self, lang: str, path: Path) -> None:
        self.lang = lang
        self.path = path

    @cached_property
    def data(self) -> bytes:
        try:
            return self.path.read_bytes()
        except OSError as exc:
            raise VocabularyError(f"shipped tag vocabulary {self.path} is unreadable: {exc}") from exc

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()[:16]

    @cached_property
    def rows(self) -> list[list[str]]:
        try:
            lines = self.data.decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise VocabularyError(f"shipped tag vocabulary {self.path} is not UTF-8: {exc}") from exc
        return [line.split("\t") for line in lines if line.strip()]

    @property
    def shown(self) -> list[str]:
        return [row[0] for row in self.rows]

    @property
    def keys(self) -> list[str]:
        return [normalise_text(row[0]) for row in self.rows]

    @property
    def sources(self) -> list[str]:
        """The English word each tag translates (its first source; the tag itself for English)."""
        return [row[1] if len(row) > 1 else row[0] for row in self.rows]


class ShippedVocabularies:
    """The shipped languages, each embedded on first use (thread-safe) and kept in memory."""

    def __init__(
        self,
        text: TextEmbedding,
        fingerprint: str,
        cache_dir: Path,
        folder: Path = SHIPPED_TAGS,
        english_weight: float = 0.75,
    ) -> None:
        self.text = text
        self.english_weight = english_weight
        self.fingerprint = fingerprint
        self.cache_dir = Path(cache_dir)
        self.folder = Path(folder)
        self._loaded: dict[str, Vocabulary] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @cached_property
    def languages(self) -> list[str]:
        return shipped_languages(self.folder)

    def words(self, lang: str) -> ShippedWords:
        if lang not in self.languages:
            raise VocabularyError(f"no shipped tag vocabulary for {lang!r}")
        return ShippedWords(lang, self.folder / f"{lang}.tsv")

    def vector_path(self, words: ShippedWords) -> Path:
        return self.cache_dir / "tag-vectors" / self.fingerprint / f"{words.lang}-{words.digest}.npy"

    def is_embedded(self, lang: str) -> bool:
        return lang in self._loaded or self.vector_path(self.words(lang)).is_file()

    def loaded(self, lang: str) -> Vocabulary | None:
        return self._loaded.get(lang)

    def get(self, lang: str, progress: Callable[[int], object] | None = None) -> Vocabulary:
        """The language's vocabulary: from memory, else from the vector cache, else embedded now and cached."""
        ready = self._loaded.get(lang)
        if ready is not None:
            return ready
        with self._guard:
            lock = self._locks.setdefault(lang, threading.Lock())
        with lock:  # one embedding per language even when several requests ask at once
            ready = self._loaded.get(lang)
            if ready is None:
                ready = self._load(lang, progress)
                self._loaded[lang] = ready
        return ready

    def _load(self, lang: str, progress: Callable[[int], object] | None) -> Vocabulary:
        words = self.words(lang)
        keys = words.keys
        path = self.vector_path(words)
        vectors = read_vectors(path, len(keys))
        if vectors is None:
            started = time.perf_counter()
            vectors = self._embed(keys, lang, progress)
            write_vectors(path, vectors)
            log.info(
                "embedded shipped tag vocabulary",
                extra={
                    "lang": lang,
                    "words": len(keys),
                    "seconds": round(time.perf_counter() - started, 2),
                    "tower": self.fingerprint,
                },
            )
        if lang != "en" and self.english_weight > 0:
            vectors = self._with_english(vectors, words.sources, path.with_suffix(".sources.npy"))
        info = {"kind": "shipped", "tower": self.fingerprint, "file": str(words.path), "sha256": words.digest}
        return Vocabulary(lang, keys, [1] * len(keys), vectors, info, words.shown, words.sources)

    def _with_english(self, vectors: np.ndarray, sources: list[str], cache: Path) -> np.ndarray:
        """Each tag's vector moved towards its English source word's: ``(1 - w)·tag + w·source``, unit length.

        The dictionary already says what the tag means ("requin" is "shark"); the text side is surest in English
        (measured on imagenet-samples with the 4-layer student, a word of the class name among the top 5 tags: fr
        0.19 with the tag's own vector, 0.39 with w = 0.75; es 0.12 → 0.42, ru 0.08 → 0.30, ja 0.08 → 0.33, de 0.02
        → 0.16). The tag's own vector keeps the rest: two senses of one English word ("banque", "rive") differ."""
        english = self.get("en")
        index = {word: i for i, word in enumerate(english.words)}
        missing = sorted({s for s in sources if s not in index})  # a few class names the English file left out
        extra: dict[str, np.ndarray] = {}
        if missing:
            found = read_vectors(cache, len(missing))
            if found is None:
                found = self._embed(missing, "en", None)
                write_vectors(cache, found)
            extra = dict(zip(missing, found, strict=True))
        source_vectors = np.stack([english.vectors[index[s]] if s in index else extra[s] for s in sources])
        blended = (1 - self.english_weight) * vectors + self.english_weight * source_vectors
        blended /= np.maximum(np.linalg.norm(blended, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(blended, dtype=np.float32)

    def _embed(self, keys: list[str], lang: str, progress: Callable[[int], object] | None) -> np.ndarray:
        return embed_in_batches(self.text, keys, lang, progress)


def embed_in_batches(
    text: TextEmbedding, texts: Sequence[str], lang: str, progress: Callable[[int], object] | None = None
) -> np.ndarray:
    """``texts`` embedded :data:`BATCH` at a time (float32 rows), ``progress`` told each batch's size."""
    chunks = []
    for start in range(0, len(texts), BATCH):
        chunks.append(np.asarray(text.embed(texts[start : start + BATCH], lang), dtype=np.float32))
        if progress is not None:
            progress(len(chunks[-1]))
    return np.ascontiguousarray(np.concatenate(chunks)) if chunks else np.zeros((0, 0), np.float32)


def read_vectors(path: Path, rows: int) -> np.ndarray | None:
    """The ``rows`` unit float32 vectors :func:`write_vectors` kept at ``path``; None (logged) when the file is
    absent, unreadable or of another shape, so the caller embeds again."""
    if not path.is_file():
        return None
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        log.warning("unreadable cached vectors, embedding again", extra={"path": str(path), "error": str(exc)})
        return None
    if vectors.ndim != 2 or len(vectors) != rows:
        log.warning("cached vectors do not fit their texts, embedding again", extra={"path": str(path)})
        return None
    return np.ascontiguousarray(unit_rows(vectors.astype(np.float32)))  # unit again after the float16 rounding


def write_vectors(path: Path, vectors: np.ndarray) -> None:
    """``vectors`` kept at ``path`` as float16, atomically; a read-only or full folder is logged, not raised (the
    vectors still serve from memory)."""
    try:
        with atomic_open(path) as handle:
            np.save(handle, vectors.astype(np.float16))
    except OSError as exc:
        log.warning("vectors not cached", extra={"path": str(path), "error": str(exc)})
