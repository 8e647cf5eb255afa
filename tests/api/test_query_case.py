"""An all-capitals query is read in lower case (``indexer.query.pipeline.unshouted``): "PANDA" finds what "panda"
finds. Measured on the shipped student in docs/model-card.md."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from indexer.query.pipeline import unshouted

pytest_plugins = ("api_fixtures",)


@pytest.mark.parametrize(
    ("typed", "read"),
    [
        ("PANDA", "panda"),
        ("KINDERWAGEN", "kinderwagen"),
        ("EIN HUND IM SCHNEE", "ein hund im schnee"),
        ("СЛОН", "слон"),
        ("GOLDFISH 2", "goldfish 2"),
        ("Panda", "Panda"),  # a capital carries the user's case: as typed
        ("Kinderwagen", "Kinderwagen"),
        ("DNA test", "DNA test"),
        ("A", "A"),  # one capital is not shouting
        ("金鱼", "金鱼"),
        ("PANDA 熊猫", "panda 熊猫"),
        ("123", "123"),
    ],
)
def test_unshouted(typed: str, read: str) -> None:
    assert unshouted(typed) == read


@pytest.mark.parametrize(
    ("typed", "lang", "read"),
    [
        ("KIRMIZI KEDİ", "tr", "kırmızı kedi"),  # Turkish: "I" is the capital of "ı", "İ" of "i"
        ("KIRMIZI KEDİ", None, "kırmızı kedi"),  # "İ" is written only in Turkish and Azerbaijani
        ("KIRMIZI KEDİ", "en", "kırmızı kedi"),  # … even where a detector guessed another language
        ("KIRMIZI", None, "kirmizi"),  # without a language or an "İ" nothing says Turkish
        ("QIRMIZI İT", "az", "qırmızı it"),
        ("ICE CREAM", "en", "ice cream"),
        ("İSTANBUL", "en", "istanbul"),  # never "i" and a combining dot, as str.lower() gives
        ("Istanbul", "tr", "Istanbul"),  # not shouted: as typed
    ],
)
def test_unshouted_in_the_query_language(typed: str, lang: str | None, read: str) -> None:
    assert unshouted(typed, lang) == read


def test_search_reads_an_all_capitals_query_in_lower_case(client: TestClient, encoded_texts: list[str]) -> None:
    seen = encoded_texts
    shouted = client.get("/v1/search", params={"q": "A RED DOG", "lang": "en"})
    typed = client.get("/v1/search", params={"q": "A Red Dog", "lang": "en"})
    assert shouted.status_code == typed.status_code == 200
    assert shouted.json()["query"] == "A RED DOG"  # the answer echoes what was typed
    assert "a red dog" in seen and "A Red Dog" in seen and "A RED DOG" not in seen
    turkish = client.get("/v1/search", params={"q": "KIRMIZI KEDİ"})
    assert turkish.status_code == 200 and "kırmızı kedi" in seen
