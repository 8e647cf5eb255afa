"""Query language detection (py3langid): right on short captions of the served languages, None on no text; a
label only when the detector is confident (issue 36)."""

from __future__ import annotations

import pytest

from indexer.encoders.languages import XLMR_100
from indexer.query.pipeline import CONFIDENT_WORD, confident_language, detect_language

CAPTIONS = {
    "en": "A little girl climbing into a wooden playhouse.",
    "de": "Ein kleines Mädchen klettert in ein Spielhaus aus Holz.",
    "fr": "Une petite fille grimpe dans une maisonnette en bois.",
    "cs": "Malá dívka leze do dřevěného hračkového domu.",
    "pt": "Uma menina pequena subindo em uma casinha de madeira.",
    "zh": "穿着连衣裙的小女孩走上台阶。",
    "ja": "木製のプレイハウスに登る少女。",
    "es": "Una niña pequeña trepando a una casita de madera.",
    "uk": "Маленька дівчинка залазить у дерев'яний ігровий будиночок.",
    "ar": "فتاة صغيرة تتسلق إلى بيت لعب خشبي.",
}


@pytest.mark.parametrize(("lang", "text"), sorted(CAPTIONS.items()))
def test_detects_short_captions(lang: str, text: str) -> None:
    code, probability = detect_language(text)
    assert code == lang
    assert probability is not None and 0.5 < probability <= 1.0


@pytest.mark.parametrize("text", ["12345", "  ", "!!! ???", "🙂🙂"])
def test_nothing_to_detect(text: str) -> None:
    assert detect_language(text) == (None, None)


# Issue 36: single words were labelled wrongly ("dog" cs, "Hund" da, "chat" qu "not supported"); the label now shows
# only what the detector is sure of, among the text encoder's languages.
@pytest.mark.parametrize("word", ["dog", "Hund", "chat", "chien", "perro", "gato", "Katze", "犬", "собака", "la plage"])
def test_a_word_the_detector_is_not_sure_of_gets_no_label(word: str) -> None:
    code, probability = confident_language(word, XLMR_100)
    assert code is None and probability is not None and probability < CONFIDENT_WORD


@pytest.mark.parametrize(
    ("lang", "text"),
    [
        ("fr", "un chien sur la plage"),
        ("de", "Ein Hund rennt am Strand"),
        ("en", "two children playing football in a park"),
        ("tr", "Karda oynayan iki köpek."),
        ("ja", "浜辺の犬"),
        *sorted(CAPTIONS.items()),
    ],
)
def test_a_sentence_is_labelled_with_its_language(lang: str, text: str) -> None:
    assert confident_language(text, XLMR_100)[0] == lang


def test_a_label_is_always_a_language_the_encoder_serves() -> None:
    assert detect_language("chat")[0] == "qu"  # the detector's own best guess among its 97 languages …
    assert detect_language("chat", XLMR_100)[0] in XLMR_100  # … never one the student does not read
    assert confident_language("12345", XLMR_100) == (None, None)
