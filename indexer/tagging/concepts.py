"""Tags chosen by concept: the photo ranks the lexicon's concepts once, from its own image vector, and every language
names that one ranking (:mod:`indexer.concepts.lexicon`; docs/tagging.md).

A concept's score for a photo has three parts:

* **class mass**: the CNN's ImageNet-1k probabilities gathered up the hierarchy (every class is a concept; a
  concept gets the probability of itself and of every class below it: a beagle photo gives *hound* and *dog*
  almost all of its mass), less ``generality`` × the share of the 1,000 classes below it (*entity*, which every
  class is under, gains nothing);
* **similarity**: ``weight`` × the student's cosine between the image vector and the concept's English name
  (its first two English lemmas), standardised over the concepts for this photo: what ImageNet has no class for
  (*girl*, *beach*, *crowd*);
* **frequency**: ``frequency`` × the concept's standardised log corpus count (WordNet's sense-tagged count): a
  common concept before a rare one of the same evidence.

The weights were chosen on 600 m30k-f8k train photos (tag words among their English captions), never on the dev
photos (benchmarks/tags_by_concept.md). The best concepts are then taken in order, skipping a concept that makes
three on one chain of the hierarchy (*beagle, hound, dog*), a third child of one parent (three terriers), or a
name the answer already shows. A concept's name in a language is its first name in the lexicon, else the word
that the language's shipped vocabulary gives for one of its English lemmas whose commonest concept it is
(``source`` says which), else the concept is not named in that language and the next one is taken.

The concept vectors (one per concept, the served text side's embedding of its English name) are computed at
set-up: ``polyglot models fetch`` runs :func:`concept_vectors` into the models folder, beside the weights they
come from, so every home that serves those models (another ``POLYGLOT_HOME``, a container's fresh volume) reads
them instead of embedding again. They lie under ``<folder>/concept-vectors/<text fingerprint>/<lexicon
digest>.npy``, in the models folder or, for a text side set-up did not cover, in ``CACHE_DIR``; a request is one
(n × d) · d product.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.concepts.lexicon import ConceptLexicon
from indexer.tagging.shipped import ShippedVocabularies, TextEmbedding, embed_in_batches, read_vectors, write_vectors
from indexer.unit import unit_rows

IMAGENET_CLASSES = 1000
LEXICON_SOURCE = "lexicon"
VOCABULARY_SOURCE = "vocabulary"
MAX_CANDIDATES = 400  # concepts looked at for one answer (k ≤ 50 are kept; the rest are skipped by the rules)


def concept_texts(lexicon: ConceptLexicon) -> list[str]:
    """What is embedded for each concept: its first two English lemmas ("dog, domestic dog")."""
    return [", ".join(lexicon.concept(concept).lemmas[:2]) for concept in lexicon.ids]


def vector_path(cache_dir: Path, fingerprint: str, lexicon: ConceptLexicon) -> Path:
    return Path(cache_dir) / "concept-vectors" / fingerprint / f"{lexicon.digest[:16]}.npy"


def concept_vectors(
    lexicon: ConceptLexicon,
    text: TextEmbedding,
    fingerprint: str,
    cache_dir: Path,
    progress: Callable[[int], object] | None = None,
    shipped_dir: Path | None = None,
) -> tuple[np.ndarray, bool]:
    """The concepts' unit vectors (float32, lexicon order) and whether they were read back: from ``shipped_dir``
    (the models folder, where set-up put them) when it has them, else from ``cache_dir``; embedded and cached
    (float16, in ``cache_dir``) when neither has vectors that fit this lexicon."""
    folders = [Path(shipped_dir)] if shipped_dir is not None else []
    for folder in [*folders, Path(cache_dir)]:
        cached = read_vectors(vector_path(folder, fingerprint, lexicon), len(lexicon))
        if cached is not None:
            return cached, True
    stored = embed_in_batches(text, concept_texts(lexicon), "en", progress).astype(np.float16)
    write_vectors(vector_path(cache_dir, fingerprint, lexicon), stored)
    # As read back: the first answer is the one every later start gives.
    return np.ascontiguousarray(unit_rows(stored.astype(np.float32))), False


@dataclass(frozen=True)
class ConceptTag:
    concept: str
    name: str
    english: str
    score: float
    source: str  # LEXICON_SOURCE or VOCABULARY_SOURCE


def same_word(name: str, lang: str) -> str:
    """What two names of one answer must not share: the folded name (Arabic without its article: قطار, القطار)."""
    folded = name.casefold()
    if lang == "ar" and folded.startswith("ال") and len(folded) > 4:
        return folded[2:]
    return folded


class ConceptTagger:
    """Ranks the lexicon's concepts for a photo and names them in any language (thread-safe after construction)."""

    def __init__(
        self,
        lexicon: ConceptLexicon,
        vectors: np.ndarray,
        class_names: Sequence[str],
        shipped: ShippedVocabularies | None = None,
        weight: float = 0.15,
        generality: float = 2.0,
        frequency: float = 0.05,
    ) -> None:
        if vectors.shape[0] != len(lexicon):
            raise ValueError(f"{vectors.shape[0]} concept vectors for {len(lexicon)} concepts")
        self.lexicon = lexicon
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.weight = weight
        self.shipped = shipped
        rows = {concept: row for row, concept in enumerate(lexicon.ids)}
        self.rows = rows
        # An ImageNet CNN: each class adds its probability to its concept and every ancestor (flat index arrays).
        self.uses_classes = len(class_names) == IMAGENET_CLASSES
        below = np.zeros(len(lexicon), np.float32)
        if self.uses_classes:
            targets: list[int] = []
            owners: list[int] = []
            for index, concept in enumerate(lexicon.imagenet_concepts()):
                up = [rows[concept], *(rows[a] for a in lexicon.ancestors(concept))]
                targets.extend(up)
                owners.extend([index] * len(up))
            self._targets = np.asarray(targets, dtype=np.int64)
            self._owners = np.asarray(owners, dtype=np.int64)
            np.add.at(below, self._targets, 1.0)
        counts = np.log1p(np.asarray([lexicon.concept(c).freq for c in lexicon.ids], dtype=np.float32))
        standard = (counts - counts.mean()) / max(float(counts.std()), 1e-6)
        self._prior = (frequency * standard - generality * below / IMAGENET_CLASSES).astype(np.float32)
        self._ancestors = [frozenset(rows[a] for a in lexicon.ancestors(c)) for c in lexicon.ids]
        self._parent = [rows[c.hypernyms[0]] if c.hypernyms else -1 for c in lexicon.concepts.values()]
        self._english = [lexicon.english(c) for c in lexicon.ids]
        self._fallback: dict[str, dict[str, str]] = {}
        self._guard = threading.Lock()

    # -- ranking -------------------------------------------------------------------------------------------------

    def scores(self, probabilities: np.ndarray | None, image_vector: np.ndarray) -> np.ndarray:
        """Every concept's score for one photo (see the module docstring)."""
        similarity = self.vectors @ np.asarray(image_vector, dtype=np.float32).reshape(-1)
        spread = float(similarity.std())
        score = self._prior + self.weight * (similarity - float(similarity.mean())) / max(spread, 1e-6)
        if self.uses_classes and probabilities is not None:
            mass = np.zeros(len(self.rows), np.float32)
            np.add.at(mass, self._targets, np.asarray(probabilities, dtype=np.float32).reshape(-1)[self._owners])
            score += mass
        return score

    def ranked(self, scores: np.ndarray, limit: int = MAX_CANDIDATES) -> np.ndarray:
        """Rows of the best ``limit`` concepts, best first (ties: lexicon order)."""
        limit = min(limit, len(scores))
        best = np.argpartition(-scores, limit - 1)[:limit]
        return best[np.lexsort((best, -scores[best]))]

    def _related(self, a: int, b: int) -> bool:
        return a in self._ancestors[b] or b in self._ancestors[a]

    def choose(self, order: Sequence[int] | np.ndarray, scores: np.ndarray, lang: str, k: int) -> list[ConceptTag]:
        """The first ``k`` concepts of ``order`` that ``lang`` can name and the hierarchy rules allow."""
        chosen: list[int] = []
        shown: set[str] = set()
        children: dict[int, int] = {}
        out: list[ConceptTag] = []
        for row in order:
            row = int(row)
            related = [other for other in chosen if self._related(other, row)]
            if len(related) >= 2 or (related and any(self._related(a, b) for a in related for b in related if a != b)):
                continue  # a third on one chain (beagle, hound, dog)
            parent = self._parent[row]
            if parent >= 0 and children.get(parent, 0) >= 2:
                continue  # a third child of one parent
            concept = self.lexicon.ids[row]
            named = self.name(concept, lang)
            if named is None or same_word(named[0], lang) in shown:
                continue
            chosen.append(row)
            shown.add(same_word(named[0], lang))
            children[parent] = children.get(parent, 0) + 1
            out.append(ConceptTag(concept, named[0], self._english[row], float(scores[row]), named[1]))
            if len(out) == k:
                break
        return out

    def tag(
        self, probabilities: np.ndarray | None, image_vector: np.ndarray, langs: Sequence[str], k: int
    ) -> dict[str, list[ConceptTag]]:
        scores = self.scores(probabilities, image_vector)
        order = self.ranked(scores, max(MAX_CANDIDATES, 8 * k))
        return {lang: self.choose(order, scores, lang, k) for lang in langs}

    # -- naming --------------------------------------------------------------------------------------------------

    @property
    def languages(self) -> list[str]:
        """Languages the concepts can be named in: English, the lexicon's, and those of a shipped vocabulary."""
        shipped = self.shipped.languages if self.shipped is not None else []
        return sorted({"en", *self.lexicon.languages, *shipped})

    def name(self, concept: str, lang: str) -> tuple[str, str] | None:
        """``(name, source)`` of ``concept`` in ``lang``: the lexicon's first name, else the shipped vocabulary's
        word for one of its English lemmas, else None."""
        written = self.lexicon.name(concept, lang)
        if written is not None:
            return written, LEXICON_SOURCE
        table = self._fallback_table(lang)
        for lemma in self.lexicon.concept(concept).lemmas:
            word = table.get(lemma.casefold())
            # Only through an English word whose commonest concept this is: the vocabulary's word for "coach" is
            # the trainer's, not the bus's (a word list cannot say which sense it translates).
            if word is not None and self.lexicon.find(lemma, "en")[:1] == [concept]:
                return word, VOCABULARY_SOURCE
        return None

    def _fallback_table(self, lang: str) -> dict[str, str]:
        """Folded English word → the shipped vocabulary's first tag translating it (a word file: no embedding)."""
        table = self._fallback.get(lang)
        if table is None:
            table = {}
            if self.shipped is not None and lang in self.shipped.languages and lang != "en":
                words = self.shipped.words(lang)
                for row in words.rows:
                    for english in row[1:]:
                        table.setdefault(english.casefold(), row[0])
            with self._guard:
                self._fallback[lang] = table
        return table
