"""The bounds of the metadata a user gives a photo (title, caption, tags), checked where it comes in.

The API's answers (``app/schemas/images.py``) declare the same bounds, from these constants: a value the index
accepted is one every answer that shows the photo can hold. They are checked on the way in (an admin upload, a
CSV/JSONL manifest row of ``index add`` or of a watched folder, and again where rows are written), never only on
the way out: a photo stored with 1,001 tags once made ``/images/{id}/info``, every ``/images`` page and
``/search`` answer that held it a 500.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_TITLE_CHARS = 10_000
MAX_CAPTION_CHARS = 10_000
MAX_TAGS = 1_000


class MetadataTooLongError(ValueError):
    """A title, caption or tag list over its bound; the message names the field, its size and the bound."""


def metadata_problem(meta: Mapping[str, Any] | None) -> str | None:
    """Why ``meta`` (``title``, ``caption``, ``tags``; other keys are not bounded) cannot be stored, or None."""
    if not meta:
        return None
    for key, bound in (("title", MAX_TITLE_CHARS), ("caption", MAX_CAPTION_CHARS)):
        value = meta.get(key)
        if value is not None and len(str(value)) > bound:
            return f"the {key} has {len(str(value)):,} characters; at most {bound:,} are allowed"
    tags = meta.get("tags")
    if tags is not None and not isinstance(tags, str | bytes) and len(tags) > MAX_TAGS:
        return f"{len(tags):,} tags; at most {MAX_TAGS:,} are allowed per image"
    return None


def check_metadata(meta: Mapping[str, Any] | None) -> None:
    """Raise :class:`MetadataTooLongError` when ``meta`` is over a bound (:func:`metadata_problem`)."""
    problem = metadata_problem(meta)
    if problem is not None:
        raise MetadataTooLongError(problem)
