"""A query's text as the encoders should see it (``/search``'s ``q`` and ``polyglot search``'s QUERY alike)."""

from __future__ import annotations

import unicodedata


def _invisible(char: str) -> bool:
    # Controls, format characters (zero-width space, BOM, bidi marks), unassigned/private code points, spaces.
    return unicodedata.category(char)[0] in "CZ"


def clean_query(text: str) -> str:
    """``q`` as the encoders should see it: control characters (NUL, escapes) become spaces, and invisible
    characters at either end go. Nothing visible left (only zero-width spaces, say) → "" (an empty query).
    Format characters inside a query stay: zero-width (non-)joiners are spelling in Persian or Hindi."""
    text = "".join(" " if unicodedata.category(char) == "Cc" else char for char in text)
    start, end = 0, len(text)
    while start < end and _invisible(text[start]):
        start += 1
    while end > start and _invisible(text[end - 1]):
        end -= 1
    return text[start:end]
