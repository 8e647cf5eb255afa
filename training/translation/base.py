"""The interface every query translator implements, for cross-lingual consistency (CLC, :mod:`indexer.query.consistency`).

SMALR (Burns et al., ECCV 2020, Sec. 3.4) scores a query together with its translations into the other languages
of the model. A translator answers a batch of texts, each in its own source language, in one target language;
``None`` where it has no translation (a dictionary that only reaches English, a language without corpus rows):
the pipeline then uses the query alone for that slot.
"""

from __future__ import annotations

from indexer.query.consistency import QueryTranslator


class TranslationError(ValueError):
    """A translator cannot be built from what was configured; the message says what to change."""


__all__ = ["QueryTranslator", "TranslationError"]
