"""Search through the concept lexicon: a query that names a concept gets that concept's English vector fused in.

When a query, read as the lexicon compares names (:func:`name_key`: lower case as its language writes it, spaces
folded, surrounding punctuation dropped), is exactly a name of a concept in its language (the given one, else the
detected one), its vector becomes ``normalise(q + α · e_en(concept))``: ``e_en`` is the text side's own vector of
the concept's English name (the concept vectors the tagger uses, :func:`indexer.tagging.concepts.concept_vectors`,
cached under the cache folder by text fingerprint and lexicon digest). A name that names several concepts takes
the one it is the commonest name of (the lexicon's :meth:`~indexer.concepts.ConceptLexicon.find` order).

α is POLYGLOT_CONCEPT_FUSION_WEIGHT (0: off, nothing loaded). Per query the cost is one dict lookup and one
vector add; the table is built once when the models load.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence

import numpy as np

from indexer.concepts import ConceptLexicon

_EDGES = string.punctuation + "¿¡«»“”„‘’。、！？・「」"


def name_key(text: str, lang: str | None) -> str:
    """``text`` as names are compared: lower case in ``lang``, one space between words, no edge punctuation."""
    from indexer.query.pipeline import lower_case

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

    def match(self, text: str, lang: str | None) -> int | None:
        """The lexicon row of the concept ``text`` names in ``lang``, or None."""
        names = self.table.get(lang) if lang else None
        return names.get(name_key(text, lang)) if names is not None else None

    def rows(
        self,
        texts: Sequence[str],
        langs: Sequence[str | None],
        detect: Callable[[str], str | None] | None = None,
    ) -> list[int | None]:
        """The concept row each text names (a text without a language: in ``detect``'s language)."""
        found: list[int | None] = []
        for text, lang in zip(texts, langs, strict=True):
            if lang is None and detect is not None:
                lang = detect(text)
            found.append(self.match(text, lang))
        return found

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
