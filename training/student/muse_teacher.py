"""mUSE as a second teacher of the words term (issue 33, item 2): its own reading of a word, in the image space.

The words term's first teacher reads only the *English* side of a dictionary pair (the word teacher's vector of
"shark" is the target of "Hai"), so a wrong or rare sense in the dictionary is taught as it stands. mUSE v3 reads
the translated word itself in its 16 languages and knows object names (the zero-training label bridge finds
48–67 % of the non-English ImageNet names of the wide dev set in its top 10). Its knowledge becomes an image-space
vector with no training, the **soft-concept** reading::

    soft(text) = Σ_c softmax_c( cos(mUSE(text), mUSE(class name_c)) / τ ) · prototype_c

(``prototype_c``: the classifier's direction of class ``c``, the concept term's target). Ranking the wide dev
photos by it gives en R@10 .830, de .593, zh .621, ru .506 (``benchmarks/muse_concept_teacher.py``,
``docs/results/student/muse-concept-teacher.json``; τ = 0.02 chosen on the English names, which are training data).

A soft-concept vector is only meaningful for a word that names a thing, so it is blended in only for the pairs
whose English word is a word of an ImageNet class name (1,247 English words; ~20 K translations in mUSE's
languages): their target becomes ``unit((1 − share) · word_teacher(English) + share · soft(translation))``.
Every other pair keeps the word teacher's target. mUSE is Apache-2.0; no EmbeddingGemma output is read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from indexer.encoders.languages import MUSE_V3
from indexer.unit import unit_rows
from training.student.words import WordPairs

# mUSE's languages whose dictionary words get its reading (English keeps the word teacher's own target).
MUSE_TEACHER_LANGS = frozenset(MUSE_V3 - {"en", "zh-tw"})


def soft_concepts(queries: np.ndarray, names: np.ndarray, prototypes: np.ndarray, temperature: float) -> np.ndarray:
    """(n, D) unit image-space vectors: ``prototypes`` (C, D) weighted by the softmax over the C class names of each
    query's cosine to them / ``temperature``; ``queries`` (n, d) and ``names`` (C, d) are one encoder's vectors."""
    logits = unit_rows(queries) @ unit_rows(names).T / temperature
    logits -= logits.max(axis=1, keepdims=True)  # exp of the largest is 1: no overflow at small τ
    weights = np.exp(logits)
    weights /= weights.sum(axis=1, keepdims=True)
    return unit_rows(weights @ prototypes).astype(np.float32)


def class_name_words(class_names: Sequence[str]) -> set[str]:
    """The lower-case words of the class names ("great white shark" → great, white, shark)."""
    return {word for name in class_names for word in name.lower().replace("-", " ").split()}


def muse_rows(words: WordPairs, class_words: set[str], langs: frozenset[str] = MUSE_TEACHER_LANGS) -> np.ndarray:
    """Rows of ``words`` that mUSE teaches: a translation in one of ``langs`` of a class-name word."""
    return np.array(
        [
            row
            for row, (lang, source) in enumerate(zip(words.lang, words.source.tolist(), strict=True))
            if lang in langs and words.english[source] in class_words
        ],
        dtype=np.int64,
    )


def blend_targets(
    words: WordPairs, targets: np.ndarray, rows: np.ndarray, soft: np.ndarray, share: float
) -> tuple[WordPairs, np.ndarray]:
    """``words`` whose ``rows`` point to targets of their own, ``unit((1 − share) · targets[source] + share ·
    soft)`` (``soft`` aligned with ``rows``), appended after ``targets`` (one per English word); the other rows
    keep theirs. Returns the new pairs and target matrix (the words term indexes it by ``source``)."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be in [0, 1], not {share}")
    if len(rows) != len(soft):
        raise ValueError(f"{len(rows)} rows but {len(soft)} soft-concept vectors")
    blended = unit_rows((1.0 - share) * targets[words.source[rows]] + share * soft).astype(np.float32)
    source = words.source.copy()
    source[rows] = len(targets) + np.arange(len(rows))
    pairs = WordPairs(words.english, words.text, words.lang, source)
    return pairs, np.concatenate([targets, blended]).astype(np.float32)
