"""Query language detection (py3langid): right on short captions of the served languages, None on no text."""

from __future__ import annotations

import pytest

from indexer.query.pipeline import detect_language

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
