"""The shipped tag vocabularies: words of their language (cheap checks over the files), and embedded once per text
side (cached by its fingerprint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tagging_fakes import FakeTextEmbedder

from indexer.asset_paths import SHIPPED_TAGS
from indexer.tagging.shipped import ShippedVocabularies, ShippedWords, shipped_languages
from training.tag_vocab.checks import english_rather_than, foreign_with_confidence, in_script

CAPTION_LANGS = ["en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk"]
LEXICON_LANGS = [
    "af",
    "ar",
    "bg",
    "bs",
    "ca",
    "cs",
    "da",
    "de",
    "es",
    "et",
    "fa",
    "fi",
    "fr",
    "hi",
    "hr",
    "hu",
    "id",
    "it",
    "ja",
    "ko",
    "lt",
    "lv",
    "mk",
    "ms",
    "nl",
    "no",
    "pl",
    "pt",
    "ro",
    "ru",
    "sk",
    "sl",
    "sq",
    "sv",
    "ta",
    "th",
    "tl",
    "tr",
    "uk",
    "vi",
    "zh",
]


def words(lang: str) -> ShippedWords:
    return ShippedWords(lang, SHIPPED_TAGS / f"{lang}.tsv")


def test_every_language_of_the_student_ships() -> None:
    assert set(shipped_languages()) == {"en", *LEXICON_LANGS} >= set(CAPTION_LANGS)
    for lang in shipped_languages():
        assert len(words(lang).rows) >= 1000, lang
    size = sum(path.stat().st_size for path in SHIPPED_TAGS.iterdir())
    assert size < 4_000_000  # words only: a few MB for every language together


@pytest.mark.parametrize("lang", shipped_languages())
def test_no_word_is_another_languages_with_high_confidence(lang: str) -> None:
    found = words(lang)
    assert len(set(found.keys)) == len(found.keys), "a tag twice"
    outside = [w for w in found.keys if not in_script(w, lang)]
    assert not outside, outside[:10]
    foreign = [(w, foreign_with_confidence(w, lang)) for w in found.keys if foreign_with_confidence(w, lang)]
    assert not foreign, foreign[:10]


def test_no_english_leaks_into_french_or_german() -> None:
    # The leaks in caption-built vocabularies, and identity pairs that are real words of the language.
    fr, de = set(words("fr").keys), set(words("de").keys)
    for leak in ("beach", "catch", "girls", "kids", "swimming", "dog", "woman"):
        assert leak not in fr and leak not in de
    assert {"pizza", "plage", "chien", "femme"} <= fr
    assert {"pizza", "strand", "hund", "frau"} <= de
    looks_english = [w for w in fr | de if english_rather_than(w, "fr" if w in fr else "de") > 0.97]
    assert len(looks_english) < 10, looks_english


def test_german_nouns_are_capitalised_and_the_rest_lower_case() -> None:
    shown = dict(zip(words("de").keys, words("de").shown, strict=True))
    assert [shown[w] for w in ("hund", "strand", "pizza", "goldfisch", "frau")] == [
        "Hund",
        "Strand",
        "Pizza",
        "Goldfisch",
        "Frau",
    ]
    assert shown["laufen"] == "laufen" and shown["rot"] == "rot"
    for lang in ("fr", "es", "ru"):
        assert all(w == s for w, s in zip(words(lang).keys, words(lang).shown, strict=True))


def test_embedded_once_per_text_side(tmp_path: Path) -> None:
    text = FakeTextEmbedder()
    first = ShippedVocabularies(text, "side-a", tmp_path).get("fr")
    calls = text.calls
    assert calls > 0 and len(first) == len(words("fr").rows)
    assert first.sources is not None and first.sources[first.words.index("chien")] == "dog"
    again = ShippedVocabularies(text, "side-a", tmp_path).get("fr")  # a new process: read from the cache
    assert text.calls == calls
    np.testing.assert_allclose(again.vectors, first.vectors, atol=2e-3)  # stored as float16
    ShippedVocabularies(text, "side-b", tmp_path).get("fr")  # another text side: embedded again
    assert text.calls > calls
    assert len(list((tmp_path / "tag-vectors").iterdir())) == 2
