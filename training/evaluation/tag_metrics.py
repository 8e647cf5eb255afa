"""How good are tags for an image? Compare them with the words of that image's own captions in that language.

Normalisation (deliberately light, the same for every method and language): tokens as in
:mod:`indexer.tagging.text` (NFC, lower case, letters and inner hyphens), then two words match when they are
equal or one is the other plus one inflection ending (``-s -e -n -x -es -en -er``, at least three letters
left). It merges the plural and gender forms that matter here ("chiens"/"chien", "Hunde"/"Hund", "cachorros"/"cachorro", "rouges"/"rouge"),
and leaves Czech case endings alone (a known under-count for cs). A multi-word tag hits when all its words do.

* precision@n: share of the first ``n`` tags that occur in the captions (divided by ``n`` even when fewer
  tags were produced, so a method cannot gain by abstaining);
* content recall: share of the captions' distinct content words (stop words removed) that some tag matches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from indexer.tagging.text import content_words, tokenize

_ENDINGS = ("es", "en", "er", "s", "e", "n", "x")
MIN_STEM = 3


def variants(word: str) -> set[str]:
    """The word and the word without one inflection ending."""
    out = {word}
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= MIN_STEM:
            out.add(word[: -len(ending)])
    return out


def related(a: str, b: str) -> bool:
    return a == b or a in variants(b) or b in variants(a)


@dataclass(frozen=True)
class Reference:
    """What one image's captions in one language contain: all their words, and their content words."""

    words: frozenset[str]
    content: frozenset[str]
    reduced: frozenset[str]  # every caption word without one ending (for the "tag = word - ending" case)

    @classmethod
    def from_captions(cls, captions: Iterable[str], lang: str) -> Reference:
        texts = list(captions)
        words = {token for t in texts for token in tokenize(t)}
        content = {w for t in texts for w in content_words(t, lang)}
        reduced = {v for w in words for v in variants(w)}
        return cls(frozenset(words), frozenset(content), frozenset(reduced))

    def has(self, token: str) -> bool:
        return token in self.reduced or bool(variants(token) & self.words)

    def hit(self, tag: str) -> bool:
        tokens = tokenize(tag)
        return bool(tokens) and all(self.has(token) for token in tokens)


def precision_at(tags: Sequence[str], reference: Reference, n: int = 5) -> float:
    return sum(reference.hit(tag) for tag in tags[:n]) / n


def content_recall(tags: Sequence[str], reference: Reference) -> float:
    if not reference.content:
        return 0.0
    predicted = {token for tag in tags for token in tokenize(tag)}
    found = sum(any(related(word, token) for token in predicted) for word in reference.content)
    return found / len(reference.content)
