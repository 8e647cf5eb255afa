"""The hybrid vocabulary from the training captions (SMALR §3.1).

Per language, the K most frequent words keep a language-specific embedding; every rarer word of every language
is a *rare* word that the pretraining step (:mod:`training.smalr.pretrain`) assigns to one shared latent token.
K = 0 gives the language-agnostic baseline (LA): every word is rare.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from training.smalr.vocab import SmalrVocab, tokenize


@dataclass
class WordList:
    languages: list[str]
    words: list[tuple[str, str]]  # (lang, word): the n_specific language-specific words first, then the rare ones
    n_specific: int

    @property
    def n_rare(self) -> int:
        return len(self.words) - self.n_specific

    def index(self) -> dict[tuple[str, str], int]:
        return {key: position for position, key in enumerate(self.words)}


def build_word_list(texts: Sequence[str], langs: Sequence[str], k_specific: int) -> WordList:
    counts: dict[str, Counter[str]] = {}
    for text, lang in zip(texts, langs, strict=True):
        counts.setdefault(lang, Counter()).update(tokenize(text))
    languages = sorted(counts)
    specific: list[tuple[str, str]] = []
    rare: list[tuple[str, str]] = []
    for lang in languages:
        # most_common breaks ties by first occurrence: sort by (-count, word) so the vocabulary is reproducible
        ranked = sorted(counts[lang].items(), key=lambda item: (-item[1], item[0]))
        specific += [(lang, word) for word, _ in ranked[:k_specific]]
        rare += [(lang, word) for word, _ in ranked[k_specific:]]
    return WordList(languages, specific + rare, len(specific))


def caption_word_ids(words: WordList, texts: Sequence[str], langs: Sequence[str]) -> list[np.ndarray]:
    """Each caption as word-list positions (words outside the list, e.g. of held-out captions, are left out)."""
    index = words.index()
    return [
        np.array([index[(lang, t)] for t in tokenize(text) if (lang, t) in index], dtype=np.int64)
        for text, lang in zip(texts, langs, strict=True)
    ]


def compact_assignment(choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latent tokens no rare word chose are dropped (§3.1): returns (kept token ids, each word's new id)."""
    used, remapped = np.unique(choice, return_inverse=True)
    return used, remapped.astype(np.int64)


def to_vocab(words: WordList, latent_of_rare: np.ndarray, n_latent: int) -> SmalrVocab:
    """The row layout of :class:`~training.smalr.vocab.SmalrVocab` from the word list and the frozen assignment."""
    table: dict[str, dict[str, int]] = {lang: {} for lang in words.languages}
    first_specific = 1 + len(words.languages)
    first_latent = first_specific + words.n_specific
    for position, (lang, word) in enumerate(words.words):
        if position < words.n_specific:
            table[lang][word] = first_specific + position
        else:
            table[lang][word] = first_latent + int(latent_of_rare[position - words.n_specific])
    return SmalrVocab(words.languages, table, words.n_specific, n_latent)
