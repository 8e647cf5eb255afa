"""The user's language from Accept-Language: parsing by quality, region fallback, default English."""

from __future__ import annotations

import json

import pytest

from app.accept_language import accepted_languages, preferred_language
from app.language_names import language_names
from indexer.asset_paths import SHIPPED_CONCEPTS, SHIPPED_TAGS
from indexer.encoders.languages import XLMR_100


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5", ["fr-ch", "fr", "en", "de"]),
        ("de;q=0.5, ja", ["ja", "de"]),  # quality first, then the header's order
        ("en;q=0, pt-BR", ["pt-br"]),  # q=0: not acceptable
        ("", []),
        (None, []),
        ("!!, fr;q=banana, 12", ["fr"]),  # malformed parts are ignored, not refused
    ],
)
def test_accepted_languages(header: str | None, expected: list[str]) -> None:
    assert accepted_languages(header) == expected


def test_preferred_language_falls_back_by_region_then_to_english() -> None:
    available = ["de", "en", "fr", "pt"]
    assert preferred_language("fr-CH, de;q=0.9", available) == "fr"
    assert preferred_language("pt-BR", available) == "pt"
    assert preferred_language("eo, de;q=0.1", available) == "de"  # the first one that has a vocabulary
    assert preferred_language("eo", available) == "en"
    assert preferred_language(None, available) == "en"


def test_the_page_names_every_language_it_tags_in() -> None:
    """``GET /languages`` gives a language's name, not its code, for every language the shipped concept lexicon or
    a shipped tag vocabulary tags in, and every language the student's e5 (XLM-R's 100) reads queries in."""
    langs = set(json.loads((SHIPPED_CONCEPTS / "manifest.json").read_text(encoding="utf-8"))["languages"])
    langs |= {path.stem for path in SHIPPED_TAGS.glob("*.tsv")} | XLMR_100
    assert {"kk", "mn", "br", "fy", "ta", "bs"} <= langs
    unnamed = [code for code, name in language_names(langs).items() if name == code]
    assert not unnamed
