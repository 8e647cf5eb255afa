"""Ranking and naming concepts for a photo: class mass up the hierarchy, the chain and sibling rules, names from
the lexicon or (where it has none) the shipped vocabulary through an English word of that one concept."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from indexer.asset_paths import SHIPPED_CONCEPTS
from indexer.concepts import ConceptLexicon
from indexer.encoders.imagenet import imagenet_class_names
from indexer.tagging.concepts import LEXICON_SOURCE, VOCABULARY_SOURCE, ConceptTagger, concept_vectors
from indexer.tagging.shipped import ShippedVocabularies

BEAGLE_CLASS = 162


class NoText:
    """A random vector of each text, the same in every run (two concepts share one only if their texts match)."""

    def embed(self, texts: Sequence[str], langs: str | None = None) -> np.ndarray:
        rows = np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=8) for t in texts])
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def lexicon() -> ConceptLexicon:
    return ConceptLexicon.load(SHIPPED_CONCEPTS)


@pytest.fixture(scope="module")
def tagger(lexicon: ConceptLexicon, tmp_path_factory: pytest.TempPathFactory) -> ConceptTagger:
    cache = tmp_path_factory.mktemp("cache")
    vectors, cached = concept_vectors(lexicon, NoText(), "fake", cache)
    assert not cached and concept_vectors(lexicon, NoText(), "fake", cache)[1]  # the second read is the cache's
    shipped = ShippedVocabularies(NoText(), "fake", Path(cache))
    return ConceptTagger(lexicon, vectors, imagenet_class_names(), shipped, weight=0.0, frequency=0.0)


def test_concept_vectors_set_up_in_the_models_folder_serve_every_home(lexicon: ConceptLexicon, tmp_path: Path) -> None:
    """``polyglot models fetch`` embeds them into the models folder; a home whose cache is empty reads them there
    and embeds nothing."""
    models, cache = tmp_path / "models", tmp_path / "home" / "cache"
    set_up, cached = concept_vectors(lexicon, NoText(), "fake", models, shipped_dir=models)
    assert not cached

    class Refuses:
        def embed(self, texts: Sequence[str], langs: str | None = None) -> np.ndarray:
            raise AssertionError("embedded again")

    served, cached = concept_vectors(lexicon, Refuses(), "fake", cache, shipped_dir=models)
    assert cached and np.array_equal(served, set_up) and not cache.exists()
    # A text side set-up did not cover (another fingerprint) is embedded into the home's cache.
    _, cached = concept_vectors(lexicon, NoText(), "other", cache, shipped_dir=models)
    assert not cached and list((cache / "concept-vectors").rglob("*.npy"))


def on_one_chain(lexicon: ConceptLexicon, concepts: list[str]) -> bool:
    for a in concepts:
        for b in concepts:
            for c in concepts:
                if len({a, b, c}) == 3 and b in lexicon.ancestors(a) and c in lexicon.ancestors(b):
                    return True
    return False


def test_a_beagle_photo_gets_a_specific_and_a_general_tag_not_a_chain(
    tagger: ConceptTagger, lexicon: ConceptLexicon
) -> None:
    probabilities = np.zeros(1000, np.float32)
    probabilities[BEAGLE_CLASS] = 1.0
    answer = tagger.tag(probabilities, np.ones(8, np.float32) / np.sqrt(8), ["en", "fr", "de"], 5)
    english = [t.concept for t in answer["en"]]
    assert english[0] == lexicon.imagenet_concepts()[BEAGLE_CLASS]  # the class itself first
    assert len(english) == 5 and not on_one_chain(lexicon, english)
    assert any(c in lexicon.ancestors(english[0]) for c in english[1:])  # and a more general one
    assert [t.name for t in answer["en"]] == [t.english for t in answer["en"]]
    assert answer["fr"][0].name == lexicon.name(english[0], "fr") and answer["fr"][0].source == LEXICON_SOURCE
    for tags in answer.values():
        parents = [lexicon.hypernyms(t.concept)[:1] for t in tags]
        assert all(parents.count(p) <= 2 for p in parents if p)  # no third child of one parent
        assert len({t.name.casefold() for t in tags}) == len(tags)


def test_a_language_without_lexicon_names_borrows_the_vocabulary_words(
    tagger: ConceptTagger, lexicon: ConceptLexicon
) -> None:
    assert "bs" not in lexicon.languages and "bs" in tagger.languages  # Bosnian: a shipped vocabulary only
    probabilities = np.zeros(1000, np.float32)
    probabilities[BEAGLE_CLASS] = 1.0
    tags = tagger.tag(probabilities, np.ones(8, np.float32) / np.sqrt(8), ["bs"], 3)["bs"]
    assert tags and all(t.source == VOCABULARY_SOURCE for t in tags)
    for t in tags:  # through an English word whose commonest concept this is
        assert any(lexicon.find(lemma, "en")[0] == t.concept for lemma in lexicon.concept(t.concept).lemmas)
    assert "he" not in tagger.languages  # never given: no names anywhere


def test_without_an_imagenet_cnn_the_similarity_alone_ranks(lexicon: ConceptLexicon, tagger: ConceptTagger) -> None:
    small = ConceptTagger(lexicon, tagger.vectors, ["red", "green", "blue"], weight=1.0, frequency=0.0)
    assert not small.uses_classes
    image = tagger.vectors[lexicon.ids.index("02084071-n")]
    assert small.tag(None, image, ["en"], 1)["en"][0].concept == "02084071-n"
