"""Perfect translations for evaluation: the parallel captions of one photo (Multi30K task 1: one English caption
and its human de/fr/cs translations; more-langs' ``multi30k-ext-mt`` rows: machine translations of that caption).

A query that is one of these captions is "translated" into the same photo's caption in the target language; any
other query (an independently written caption) has no translation. It measures what CLC can gain with ideal
translations, apart from what a real translator delivers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

PARALLEL_SOURCES = frozenset({"multi30k-task1", "multi30k-ext-mt"})


class ParallelTranslator:
    name = "parallel"

    def __init__(self, rows: Iterable[tuple[str, str, str, str]], sources: frozenset[str] = PARALLEL_SOURCES) -> None:
        """``rows``: ``(image, lang, text, source)`` of a caption collection; only ``sources`` rows are parallel."""
        self.groups: dict[tuple[str, str], str] = {}  # (lang, text) → image
        self.members: dict[str, dict[str, str]] = {}  # image → lang → its parallel caption
        for image, lang, text, source in rows:
            if source in sources:
                self.groups.setdefault((lang, text), image)
                self.members.setdefault(image, {}).setdefault(lang, text)

    def translate(self, texts: Sequence[str], sources: Sequence[str | None], target: str) -> list[str | None]:
        out: list[str | None] = []
        for text, lang in zip(texts, sources, strict=True):
            image = self.groups.get((lang or "", text))
            out.append(self.members[image].get(target) if image is not None else None)
        return out
