"""The user's languages from an HTTP ``Accept-Language`` header (RFC 9110 §12.5.4), best first.

``"fr-CH, fr;q=0.9, en;q=0.8, *;q=0.5"`` → ``["fr-ch", "fr", "en"]``: ranges by quality (ties in the header's order),
``q=0`` and ``*`` dropped, malformed parts ignored (a browser's header is never a reason to refuse a request).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
