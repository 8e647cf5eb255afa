"""Dictionary translation: the word-by-word English glosses of :mod:`training.glosses` (MUSE lexicons) as a
:class:`~training.translation.base.QueryTranslator`. The dictionaries are English→X, and a gloss is only useful
in the language the towers know best, so the only target is English; other targets answer None."""

from __future__ import annotations

from collections.abc import Sequence

from training.glosses import LexiconTranslator


class GlossTranslator:
    name = "gloss"

    def __init__(self, lexicons: LexiconTranslator) -> None:
        self.lexicons = lexicons

    def translate(self, texts: Sequence[str], sources: Sequence[str | None], target: str) -> list[str | None]:
        if target != "en":
            return [None] * len(texts)
        return [self.lexicons.translate(text, lang) or None for text, lang in zip(texts, sources, strict=True)]
