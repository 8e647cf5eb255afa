"""Search through the concept lexicon: a query that names a concept gets that concept's English vector fused in.

When a query, read as the lexicon compares names (:func:`name_key`: lower case as its language writes it, spaces
folded, surrounding punctuation dropped), is exactly a name of a concept in its language (the given one, or the one
``/search`` detected with confidence), its vector becomes ``normalise(q + α · e_en(concept))``: ``e_en`` is the text side's own vector of
the concept's English name (the concept vectors the tagger uses, :func:`indexer.tagging.concepts.concept_vectors`,
cached under the cache folder by text fingerprint and lexicon digest). A name that names several concepts takes
the one it is the commonest name of (the lexicon's :meth:`~indexer.concepts.ConceptLexicon.find` order). A query
with no language fuses only a name that means one concept in every language that has it: a detector's guess for a
single word is often wrong (``chat`` read as French would pull an English query towards *cat*).

α is POLYGLOT_CONCEPT_FUSION_WEIGHT (0: off, nothing loaded). Per query the cost is one dict lookup and one
vector add; the table is built once when the models load.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from indexer.concepts import ConceptLexicon
from indexer.query.pipeline import lower_case

_EDGES = string.punctuation + "¿¡«»“”„‘’。、！？・「」"


def name_key(text: str, lang: str | None) -> str:
    """``text`` as names are compared: lower case in ``lang``, one space between words, no edge punctuation."""
    return " ".join(lower_case(text, lang).casefold().split()).strip(_EDGES).strip()


class ConceptFusion:
    def __init__(self, lexicon: ConceptLexicon, vectors: np.ndarray, weight: float) -> None:
        """``vectors``: the concepts' unit English vectors in lexicon order; ``weight``: α."""
        if len(vectors) != len(lexicon):
            raise ValueError(f"{len(vectors)} concept vectors for a lexicon of {len(lexicon)} concepts")
        self.weight = float(weight)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.ids = list(lexicon.ids)
        row = {concept: i for i, concept in enumerate(lexicon.ids)}
        self.table: dict[str, dict[str, int]] = {}
        for lang in ["en", *lexicon.languages]:
            ranked: dict[str, tuple[int, int, int]] = {}
            for order, concept in enumerate(lexicon.ids):
                for position, written in enumerate(lexicon.names(concept, lang)):
                    key = name_key(written, lang)
                    candidate = (position, order, row[concept])
                    if key and (key not in ranked or candidate < ranked[key]):
                        ranked[key] = candidate
            self.table[lang] = {key: hit[2] for key, hit in ranked.items()}
        self.languages = frozenset(self.table)
        # A query in no known language: a name fuses only when every language it is a name in means one concept.
        anywhere: dict[str, int | None] = {}
        for names in self.table.values():
            for key, meant in names.items():
                anywhere[key] = meant if anywhere.get(key, meant) == meant else None
        self.anywhere = {key: meant for key, meant in anywhere.items() if meant is not None}

    def match(self, text: str, lang: str | None) -> int | None:
        """The lexicon row of the concept ``text`` names in ``lang`` (None: in whichever language, when all the
        languages it is a name in agree on one concept), or None."""
        if lang is None:
            return self.anywhere.get(name_key(text, None))
        names = self.table.get(lang)
        return names.get(name_key(text, lang)) if names is not None else None

    def rows(self, texts: Sequence[str], langs: Sequence[str | None]) -> list[int | None]:
        """The concept row each text names in its language (see :meth:`match`)."""
        return [self.match(text, lang) for text, lang in zip(texts, langs, strict=True)]

    def fuse(self, vectors: np.ndarray, rows: Sequence[int | None], weight: float | None = None) -> np.ndarray:
        """``vectors`` with each matched row's concept vector added (× α) and renormalised; others unchanged."""
        alpha = self.weight if weight is None else weight
        out = np.array(vectors, dtype=np.float32, copy=True)
        if alpha == 0:
            return out
        for i, row in enumerate(rows):
            if row is not None:
                fused = out[i] + alpha * self.vectors[row]
                out[i] = fused / max(float(np.linalg.norm(fused)), 1e-12)
        return out
