"""Names of things from the concept lexicon for the student's ``lexicon`` term: every name of a concept, in every
language the lexicon names it in, is taught to land where the word teacher puts the concept's English text.

The shipped lexicon (``indexer/assets/concepts/``, Open Multilingual Wordnet and its Wiktionary wordnets; see its
NOTICE) names ~9,400 concepts people photograph in 57 languages. The concept term teaches only the 1,000 ImageNet
classes, and the words term only dictionary words of captions; this term reaches the rest, by meaning rather than by
word (the lexicon lists *Kinderwagen* under the concept "baby buggy", not under a dictionary word).

The English text of a concept is what the tagger embeds for it (:func:`indexer.tagging.concepts.concept_texts`, its
first two lemmas), so a name's target is the concept's own tag vector. A seeded share of the concepts is held out in
every language (all their names), for the run's curve. Languages that no data may touch (``EXCLUDED``) are dropped
even if a lexicon were to name them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from indexer.concepts.lexicon import ConceptLexicon
from indexer.tagging.concepts import concept_texts
from training.concepts.names import EXCLUDED
from training.student.words import Embed, WordPairs, nearest_source_check

# The curve's check: languages with many names and several scripts.
LEXICON_CHECK_LANGS = ("de", "fr", "zh", "ja", "ar", "ru", "tr", "ko")


def lexicon_pairs(lexicon: ConceptLexicon, holdout: float = 0.05, seed: int = 0) -> tuple[WordPairs, WordPairs]:
    """(train, held-out) pairs: each name of a concept in each language (and its English lemmas, as ``en``), with
    the concept's English text as the source. A seeded ``holdout`` share of the concepts is held out whole."""
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be in [0, 1); got {holdout}")
    order = list(lexicon.ids)
    random.Random(seed).shuffle(order)
    held = set(order[: round(holdout * len(order))])
    english = concept_texts(lexicon)
    languages = [lang for lang in lexicon.languages if lang != "en" and lang not in EXCLUDED]
    parts = []
    for keep in (lambda c: c not in held, lambda c: c in held):
        chosen = [n for n, concept in enumerate(lexicon.ids) if keep(concept)]
        sources = [english[n] for n in chosen]
        text: list[str] = []
        lang: list[str] = []
        source: list[int] = []
        for row, n in enumerate(chosen):
            concept = lexicon.ids[n]
            for lemma in lexicon.concept(concept).lemmas:
                text.append(lemma)
                lang.append("en")
                source.append(row)
            for code in languages:
                for name in lexicon.names(concept, code):
                    text.append(name)
                    lang.append(code)
                    source.append(row)
        parts.append(WordPairs(sources, text, lang, np.array(source, dtype=np.int64)))
    return parts[0], parts[1]


def lexicon_check(held: WordPairs, langs: Sequence[str] = LEXICON_CHECK_LANGS) -> Callable[[Embed], dict[str, float]]:
    """Held-out concepts: how often a name's nearest held-out concept (its English text, by the model's own
    vectors) is its own (R@1 among the held-out concepts), per language (``lexicon-XX``)."""
    return nearest_source_check(held, langs, "lexicon")
