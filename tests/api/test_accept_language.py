"""The user's language from Accept-Language: parsing by quality, region fallback, default English."""

from __future__ import annotations

import pytest

from app.accept_language import accepted_languages, preferred_language


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
