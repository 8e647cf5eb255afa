"""The user's languages from an HTTP ``Accept-Language`` header (RFC 9110 §12.5.4), best first.

``"fr-CH, fr;q=0.9, en;q=0.8, *;q=0.5"`` → ``["fr-ch", "fr", "en"]``: ranges by quality (ties in the header's order),
``q=0`` and ``*`` dropped, malformed parts ignored (a browser's header is never a reason to refuse a request).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

from fastapi import Depends, Header, Query, Response

from indexer.places import names_places

_RANGE = re.compile(r"^[A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*$")
_QUALITY = re.compile(r"^q=([01](?:\.\d{0,3})?)$")


def accepted_languages(header: str | None) -> list[str]:
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate((header or "").split(",")):
        code, *params = [piece.strip() for piece in part.split(";")]
        if not _RANGE.match(code):
            continue
        quality = 1.0
        for param in params:
            match = _QUALITY.match(param.replace(" ", "").lower())
            if match:
                quality = float(match.group(1))
        if quality > 0:
            ranked.append((-quality, position, code.lower()))
    return list(dict.fromkeys(code for _, _, code in sorted(ranked)))


def preferred_language(header: str | None, available: Iterable[str], default: str = "en") -> str:
    """The best of the header's languages that is ``available`` (a region falls back to its language: ``fr-CH`` →
    ``fr``), else ``default``."""
    have = set(available)
    for code in accepted_languages(header):
        for candidate in (code, code.split("-")[0]):
            if candidate in have:
                return candidate
    return default


# ------------------------------------------------------------------ the reader's language
_LANGUAGE = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$"
AcceptLanguage = Annotated[
    str | None,
    Header(
        alias="Accept-Language",
        description="The reader's languages: place lines (`metadata.place`) are shown in the best of them that the "
        "Unicode CLDR has names in, else English.",
    ),
]


def reader_language(response: Response, accept_language: AcceptLanguage = None) -> str:
    """The language answers are shown in: the Accept-Language header's best language that CLDR names places in,
    else English (the answer varies with the header: caches must key on it)."""
    response.headers["Vary"] = "Accept-Language"
    return next((code for code in accepted_languages(accept_language) if names_places(code)), "en")


ReaderLanguage = Annotated[str, Depends(reader_language)]


def info_language(
    response: Response,
    accept_language: AcceptLanguage = None,
    lang: Annotated[
        str | None,
        Query(
            max_length=35,
            pattern=_LANGUAGE,
            description="Show the place line in this language (BCP 47: fr, pt-BR, zh-TW). Absent: Accept-Language.",
        ),
    ] = None,
) -> str:
    return lang if lang is not None else reader_language(response, accept_language)


InfoLanguage = Annotated[str, Depends(info_language)]
