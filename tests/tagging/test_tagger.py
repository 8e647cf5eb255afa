"""The Tagger end to end on fakes: context picks the sense, languages, k, source kinds, vocab re-embedding."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from tagging_fakes import FakeTextEmbedder, make_tagger, solid, unit, vocabulary

from indexer.tagging.source_tags import MatrixCaptionRetriever
from indexer.tagging.tagger import Tagger, UnknownLanguageError

BLUE, RED = (10, 10, 250), (250, 10, 10)


def test_image_context_chooses_the_sense_of_bank() -> None:
    tagger = make_tagger()
    river = tagger.tag(solid(BLUE), ["fr"], k=1)["fr"]
    city = tagger.tag(solid(RED), ["fr"], k=1)["fr"]
    assert [(t.tag, t.source) for t in river] == [("rive", "bank")]
    assert [(t.tag, t.source) for t in city] == [("banque", "bank")]


def test_several_languages_and_one_target_per_source() -> None:
    result = make_tagger().tag(solid(BLUE), ["fr", "de"], k=3)
    assert set(result) == {"fr", "de"}
    assert sorted(t.source for t in result["fr"]) == ["bank", "dog", "lakeshore"]
    fr = {t.source: t.tag for t in result["fr"]}
    assert fr["bank"] == "rive" and len(set(fr.values())) == 3  # lakeshore's best (rive) is taken: the next one
    assert result["de"][0].tag == "ufer"
    for tags in result.values():  # best score first, whatever the order of the source tags
        assert [t.score for t in tags] == sorted((t.score for t in tags), reverse=True)


def test_scores_follow_equation_5() -> None:
    tagger = make_tagger(w1=0.65, w2=0.35)
    tag = tagger.tag(solid(BLUE), ["fr"], k=1)["fr"][0]
    image = unit(10, 10, 250)
    expected = 0.65 * float(image @ unit(0.2, 0, 1)) + 0.35 * float(unit(1, 0, 1) @ unit(0.2, 0, 1))
    assert tag.score == pytest.approx(expected, abs=1e-5)


def test_text_only_weights_ignore_the_image() -> None:
    tagger = make_tagger(w1=0.0, w2=1.0)
    river = tagger.tag(solid(BLUE), ["fr"], k=1)["fr"][0].tag
    city = tagger.tag(solid(RED), ["fr"], k=1)["fr"][0].tag
    assert river == city  # no context: both images get the same translation of "bank"


def test_unknown_language_lists_the_available_ones() -> None:
    with pytest.raises(UnknownLanguageError) as error:
        make_tagger().tag(solid(BLUE), ["fr", "xx"], k=2)
    assert error.value.unknown == ["xx"]
    assert error.value.available == ["de", "fr"]
    assert "de, fr" in str(error.value)


def test_k_outside_the_limits_is_refused() -> None:
    tagger = make_tagger(max_k=5)
    with pytest.raises(ValueError, match="between 1 and 5"):
        tagger.tag(solid(BLUE), ["fr"], k=6)


def test_caption_source_tags_come_from_retrieved_captions() -> None:
    captions = MatrixCaptionRetriever(
        ["A dog swims near the river bank", "A bank building downtown"],
        np.stack([unit(0, 0.3, 1), unit(1, 0, 0)]),
    )
    tagger = make_tagger(captions_k=1)
    tagger.captions = captions
    result = tagger.tag(solid(BLUE), ["fr"], k=2, source="auto")["fr"]
    assert [t.source for t in result] == ["bank", "dog"]  # first caption only; "near" etc. are stop words
    assert result[0].tag == "rive"


def test_caption_source_without_a_caption_index_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="caption index"):
        make_tagger().tag(solid(BLUE), ["fr"], k=2, source="captions")


def test_vocabulary_from_another_tower_is_re_embedded() -> None:
    text = FakeTextEmbedder()
    stale = vocabulary("fr", ["banque", "rive"], text)
    stale.vectors = np.zeros_like(stale.vectors)  # what another tower would have produced, here: nonsense
    stale.info["tower"] = "another"
    tagger = make_tagger()
    tagger.set_vocabularies({"fr": stale})
    assert tagger.tag(solid(BLUE), ["fr"], k=1)["fr"][0].tag == "rive"


def test_concurrent_calls_agree() -> None:
    tagger: Tagger = make_tagger()
    results: list[str] = []

    def work() -> None:
        for _ in range(20):
            results.append(tagger.tag(solid(BLUE), ["fr"], k=1)["fr"][0].tag)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == ["rive"] * 80


def test_empty_caption_index_falls_back_in_auto_and_is_an_error_when_asked_for() -> None:
    tagger = make_tagger()
    tagger.captions = MatrixCaptionRetriever([], np.zeros((0, 3), np.float32))
    assert [t.source for t in tagger.tag(solid(BLUE), ["fr"], k=2)["fr"]] == ["bank", "lakeshore"]
    with pytest.raises(ValueError, match="polyglot index captions add"):
        tagger.tag(solid(BLUE), ["fr"], k=2, source="captions")


def test_remembered_class_names_give_the_same_tags_from_their_precomputed_cosines() -> None:
    tagger = make_tagger()
    direct = tagger.tag(solid(BLUE), ["fr", "de"], k=3)
    names = ["bank", "lakeshore", "dog"]  # the fake CNN's class names, cleaned
    tagger.remember_sources(names, FakeTextEmbedder().embed(names))
    table = tagger.tag(solid(BLUE), ["fr", "de"], k=3)
    assert set(tagger._class_tables) == {"fr", "de"}  # the precomputed path was taken
    for lang in ("fr", "de"):
        assert [(t.tag, t.source) for t in table[lang]] == [(t.tag, t.source) for t in direct[lang]]
        assert [t.score for t in table[lang]] == pytest.approx([t.score for t in direct[lang]], abs=1e-6)
