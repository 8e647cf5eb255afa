"""Word-level translation of English tags with a bilingual lexicon: the baseline that cannot see the image.

Lexicon files are ``english<TAB>other`` lines (the MUSE dictionaries). Among a word's translations the one
most frequent in the target language's reference text wins (ties: file order). Identity pairs ("bank" →
"bank") are dropped unless the word really is used in the target language, i.e. occurs in that reference
text ("jeans", "taxi"); the MUSE files hold many identity pairs that are names, numbers or noise.
A multi-word tag with no entry of its own is translated through its last word (the English head noun).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from indexer.tagging.text import normalise_text


class Lexicon:
    def __init__(self, pairs: Mapping[str, Sequence[str]]) -> None:
        self.pairs = {source: list(targets) for source, targets in pairs.items()}

    @classmethod
    def read(cls, path: Path) -> Lexicon:
        pairs: dict[str, list[str]] = {}
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            source, _, target = line.partition("\t")
            if source and target:
                pairs.setdefault(normalise_text(source), []).append(normalise_text(target))
        return cls(pairs)

    def candidates(self, word: str, frequency: Mapping[str, int]) -> list[str]:
        return [t for t in self.pairs.get(word, []) if t != word or frequency.get(t, 0) > 0]

    def translate(self, tag: str, frequency: Mapping[str, int]) -> str | None:
        """Best translation of ``tag`` (or of its head word), or ``None`` when the lexicon has none."""
        tag = normalise_text(tag)
        for key in dict.fromkeys([tag, tag.split()[-1] if tag.split() else tag]):
            candidates = self.candidates(key, frequency)
            if candidates:
                return max(candidates, key=lambda t: (frequency.get(t, 0), -candidates.index(t)))
        return None

    def translate_tags(self, tags: Sequence[str], frequency: Mapping[str, int] | Counter[str], k: int) -> list[str]:
        """Up to ``k`` distinct translations, in source order; untranslatable tags are skipped."""
        out: list[str] = []
        for tag in tags:
            target = self.translate(tag, frequency)
            if target is not None and target not in out:
                out.append(target)
            if len(out) == k:
                break
        return out
