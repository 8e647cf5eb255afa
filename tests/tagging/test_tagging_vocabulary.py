"""Tokenisation, stop words, vocabulary building, versioned storage, source tags and the lexicon baseline."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tagging_fakes import FakeTextEmbedder

from indexer.tagging.source_tags import caption_source_tags, clean_class_name, imagenet_source_tags
from indexer.tagging.store import VocabularyStore
from indexer.tagging.text import content_words, tokenize, written_form
from indexer.tagging.vocabulary import (
    VocabularyError,
    build_vocabulary,
    count_from_texts,
    read_texts,
    read_word_list,
)
from training.evaluation.lexicon_baseline import Lexicon


def test_tokenize_handles_accents_elision_hyphens_and_digits() -> None:
    text = "L'homme d’affaires porte un T-shirt à l'Extérieur, 2 chiens; Straße"
    assert tokenize(text) == ["homme", "affaires", "porte", "un", "t-shirt", "extérieur", "chiens", "straße"]


def test_content_words_drop_stop_words_but_keep_photo_nouns() -> None:
    assert content_words("Un homme et une femme dans la rue", "fr") == ["homme", "femme", "rue"]
    assert content_words("A man with a group of dogs", "en") == ["man", "group", "dogs"]
    assert content_words("Ein Hund läuft über die Wiese", "de") == ["hund", "läuft", "wiese"]


def test_unknown_language_has_no_stop_words() -> None:
    assert content_words("the dog", "xx") == ["the", "dog"]


def test_read_texts_from_caption_jsonl_and_plain_lines(tmp_path: Path) -> None:
    jsonl = tmp_path / "captions.jsonl"
    rows = [{"image": "1.jpg", "lang": "fr", "text": "Un chien"}, {"image": "1.jpg", "lang": "de", "text": "Hund"}]
    jsonl.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert list(read_texts(jsonl, "fr")) == ["Un chien"]
    plain = tmp_path / "notes.txt"
    plain.write_text("Un chien\n\nUne rive\n", encoding="utf-8")
    assert list(read_texts(plain, "fr")) == ["Un chien", "Une rive"]


def test_bad_jsonl_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"lang": "fr", "text": "ok"}\n{"oops": 1}\n', encoding="utf-8")
    with pytest.raises(VocabularyError, match=r"bad.jsonl:2"):
        list(read_texts(path, "fr"))


def test_word_list_keeps_phrases_and_skips_comments(tmp_path: Path) -> None:
    path = tmp_path / "words.txt"
    path.write_text("# tags\nRive\nchien  de berger\nrive\n", encoding="utf-8")
    assert read_word_list(path) == Counter({"rive": 2, "chien de berger": 1})


def test_build_vocabulary_applies_min_count_and_order() -> None:
    counts = count_from_texts(["un chien sur la rive", "le chien", "une rive", "un chat"], "fr")
    vocab = build_vocabulary("fr", counts, FakeTextEmbedder().embed, min_count=2)
    assert vocab.words == ["chien", "rive"]
    assert vocab.counts == [2, 2]
    assert vocab.vectors.shape == (2, 3)
    with pytest.raises(VocabularyError, match="min-count"):
        build_vocabulary("fr", counts, FakeTextEmbedder().embed, min_count=5)


def test_store_versions_and_current_pointer(tmp_path: Path) -> None:
    store = VocabularyStore.beside_index(tmp_path)
    embed = FakeTextEmbedder().embed
    first = build_vocabulary("fr", Counter({"chien": 3, "rive": 2}), embed, min_count=1, info={"tower": "t1"})
    second = build_vocabulary("fr", Counter({"rive": 4}), embed, min_count=1)
    assert store.save(first) == 1
    assert store.save(second) == 2
    assert store.versions("fr") == [1, 2]
    assert store.languages() == ["fr"]
    assert store.load("fr").words == ["rive"]
    old = store.load("fr", version=1)
    assert old.words == ["chien", "rive"] and old.info["tower"] == "t1"
    np.testing.assert_allclose(old.vectors, first.vectors)
    assert (tmp_path / "tags" / "fr" / "current").read_text().strip() == "v2"
    assert not [p for p in (tmp_path / "tags" / "fr").iterdir() if p.name.startswith(".")]


def test_concurrent_saves_get_distinct_versions_or_fail_cleanly(tmp_path: Path) -> None:
    store = VocabularyStore(tmp_path)
    vocab = build_vocabulary("de", Counter({"hund": 2}), FakeTextEmbedder().embed, min_count=1)
    results: list[object] = []

    def save() -> None:
        try:
            results.append(store.save(vocab))
        except OSError as exc:  # lost the race for a version number: nothing half-written remains
            results.append(exc)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    versions = [r for r in results if isinstance(r, int)]
    assert versions and len(set(versions)) == len(versions)
    assert store.load("de").words == ["hund"]
    assert sorted(store.versions("de")) == sorted(versions)


def test_missing_language_error_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="tags vocab build --lang pt"):
        VocabularyStore(tmp_path).load("pt")
    with pytest.raises(VocabularyError, match="not a language code"):
        VocabularyStore(tmp_path).load("../etc")


def test_imagenet_names_are_cleaned_and_deduplicated() -> None:
    assert clean_class_name("kite (bird of prey)") == "kite"
    assert clean_class_name("cardboard box / carton") == "cardboard box"
    assert clean_class_name("Geoffroy's spider monkey") == "geoffroy spider monkey"
    names = ["Drake (male duck)", "drake", "lakeshore"]
    assert imagenet_source_tags(np.array([0.5, 0.3, 0.2]), names, 5) == ["drake", "lakeshore"]


def test_caption_words_rank_by_summed_similarity() -> None:
    captions = [("A dog runs on the beach", 0.9), ("A dog swims", 0.8), ("A beach at night", 0.1)]
    assert caption_source_tags(captions, 3) == ["dog", "beach", "runs"]


def test_lexicon_prefers_frequent_translations_and_drops_identities() -> None:
    lexicon = Lexicon({"bank": ["bank", "banque", "rive"], "jeans": ["jeans"], "taxi": ["taxi"], "dog": ["chien"]})
    frequency = {"rive": 5, "banque": 2, "jeans": 3}
    assert lexicon.translate("bank", frequency) == "rive"
    assert lexicon.translate("bank", {}) == "banque"  # identity "bank" dropped, first real translation
    assert lexicon.translate("jeans", frequency) == "jeans"  # identity used in the target captions: kept
    assert lexicon.translate("taxi", frequency) is None
    assert lexicon.translate("hot dog", frequency) == "chien"  # head word
    assert lexicon.translate_tags(["bank", "taxi", "river bank", "dog"], frequency, 5) == ["rive", "chien"]


def test_tags_keep_how_the_language_writes_them(tmp_path: Path) -> None:
    forms: dict[str, Counter[str]] = {}
    texts = ["Ein Hund läuft über die Wiese", "Zwei Hunde und ein Hund", "Hund", "Wiese mit Blumen"]
    counts = count_from_texts(texts, "de", forms)
    assert counts["hund"] == 3
    vocab = build_vocabulary("de", counts, FakeTextEmbedder().embed, min_count=1, forms=forms)
    written = dict(zip(vocab.words, vocab.display or [], strict=True))
    assert written["hund"] == "Hund" and written["wiese"] == "Wiese" and written["läuft"] == "läuft"
    # Sentence case at the start of a caption never beats the form seen inside a caption.
    french: dict[str, Counter[str]] = {}
    count_from_texts(["Homme assis", "un homme debout"], "fr", french)
    assert written_form("homme", french) == "homme"
    assert written_form("debout", {}) == "debout"
    store = VocabularyStore(tmp_path)
    store.save(vocab)
    assert store.load("de").display == vocab.display
