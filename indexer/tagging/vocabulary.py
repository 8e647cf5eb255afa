"""A target-language tag vocabulary: words with their counts and their unit vectors in the index space.

Built from the user's own text (a caption collection or plain text: frequent content words), or from a
plain word list (one tag per line, phrases allowed). Embedded once with the text tower; ranking is a
matrix product against ``vectors`` (a few thousand rows, so a numpy matrix beats an ANN index here).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from indexer.caption_records import CaptionFileError, iter_captions
from indexer.regular_files import open_regular_text, read_regular_text
from indexer.tagging.text import count_content_words, normalise_text, written_form

DEFAULT_MIN_COUNT = 2
DEFAULT_MAX_WORDS = 5000


class VocabularyError(ValueError):
    """The input cannot make a vocabulary (no words, unreadable file, bad JSON line); the message says why."""


@dataclass
class Vocabulary:
    lang: str
    words: list[str]
    counts: list[int]
    vectors: np.ndarray  # (len(words), dim) float32 unit rows, aligned with words
    info: dict[str, Any] = field(default_factory=dict)
    display: list[str] | None = None  # how each word is written (German nouns capitalised); default: words
    # The English word each tag translates (shipped vocabularies): two tags of one source are one sense twice.
    sources: list[str] | None = None

    def __post_init__(self) -> None:
        if not (len(self.words) == len(self.counts) == len(self.vectors)):
            raise ValueError(f"{len(self.words)} words, {len(self.counts)} counts, {len(self.vectors)} vectors")
        if self.display is None or len(self.display) != len(self.words):
            self.display = list(self.words)
        if self.sources is not None and len(self.sources) != len(self.words):
            raise ValueError(f"{len(self.words)} words but {len(self.sources)} English sources")

    def __len__(self) -> int:
        return len(self.words)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def count(self, word: str) -> int:
        index = self.index.get(word)
        return 0 if index is None else self.counts[index]

    @property
    def index(self) -> dict[str, int]:
        cached: dict[str, int] | None = self.__dict__.get("_index")
        if cached is None:
            cached = {word: i for i, word in enumerate(self.words)}
            self.__dict__["_index"] = cached
        return cached


def read_texts(path: Path, lang: str) -> Iterator[str]:
    """Texts of ``lang`` in ``path``: a captions JSONL file (the shared format, :mod:`indexer.caption_records`) or
    plain text lines.

    The format is decided by the first non-empty line: a JSON object means JSONL.
    """
    path = Path(path)
    try:
        with open_regular_text(path) as handle:  # a FIFO or device: refused at once
            first = next((line.strip() for line in handle if line.strip()), "")
            if not first.startswith("{"):
                yield from (line.strip() for line in itertools.chain([first], handle) if line.strip())
                return
    except (OSError, UnicodeDecodeError) as exc:
        raise VocabularyError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    try:
        yield from (caption.text for caption in iter_captions(path, [lang]))
    except CaptionFileError as exc:
        raise VocabularyError(str(exc)) from exc


def read_word_list(path: Path) -> Counter[str]:
    """One tag per line (a word or a short phrase); repeated lines add up."""
    counts: Counter[str] = Counter()
    try:
        lines = read_regular_text(path).splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise VocabularyError(f"cannot read word list {path}: {exc}") from exc
    for line in lines:
        word = " ".join(normalise_text(line).split())
        if word and not word.startswith("#"):
            counts[word] += 1
    return counts


def select_words(counts: Counter[str], min_count: int, max_words: int) -> list[tuple[str, int]]:
    """Most frequent words first (ties alphabetical, so builds are reproducible), at least ``min_count``."""
    kept = [(word, n) for word, n in counts.items() if n >= min_count]
    kept.sort(key=lambda item: (-item[1], item[0]))
    return kept[:max_words]


def build_vocabulary(
    lang: str,
    counts: Counter[str],
    embed: Callable[[Sequence[str]], np.ndarray],
    min_count: int = DEFAULT_MIN_COUNT,
    max_words: int = DEFAULT_MAX_WORDS,
    info: dict[str, Any] | None = None,
    batch_size: int = 256,
    progress: Callable[[int], object] | None = None,
    forms: dict[str, Counter[str]] | None = None,
) -> Vocabulary:
    selected = select_words(counts, min_count, max_words)
    if not selected:
        raise VocabularyError(
            f"no {lang} word occurs at least {min_count} times in the input "
            f"({len(counts)} distinct content words): lower --min-count or give more text"
        )
    words = [word for word, _ in selected]
    chunks = []
    for start in range(0, len(words), batch_size):
        chunks.append(np.asarray(embed(words[start : start + batch_size]), dtype=np.float32))
        if progress is not None:
            progress(len(chunks[-1]))
    vectors = np.ascontiguousarray(np.concatenate(chunks))
    meta = {"min_count": min_count, "max_words": max_words, "distinct_words_seen": len(counts), **(info or {})}
    display = [written_form(word, forms) for word in words]
    return Vocabulary(lang, words, [n for _, n in selected], vectors, meta, display)


def count_from_texts(texts: Iterable[str], lang: str, forms: dict[str, Counter[str]] | None = None) -> Counter[str]:
    return count_content_words(texts, lang, forms)


def vectors_fingerprint(vectors: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(vectors, dtype=np.float32).tobytes()).hexdigest()[:16]
