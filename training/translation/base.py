"""The interface every query translator implements, for cross-lingual consistency (CLC, :mod:`training.clc.consistency`).

SMALR (Burns et al., ECCV 2020, Sec. 3.4) scores a query together with its translations into the other languages
of the model. A translator answers a batch of texts, each in its own source language, in one target language;
``None`` where it has no translation (a dictionary that only reaches English, a language without corpus rows):
the pipeline then uses the query alone for that slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


class TranslationError(ValueError):
    """A translator cannot be built from what was configured; the message says what to change."""


@runtime_checkable
class QueryTranslator(Protocol):
    name: str  # reported by /search and polyglot evaluate ("gloss", "retrieval", "mt:argos", "parallel")

    def translate(self, texts: Sequence[str], sources: Sequence[str | None], target: str) -> list[str | None]:
        """One translation (or None) per text into ``target``; texts already in ``target`` are not asked."""
        ...
