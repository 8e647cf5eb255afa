"""Word-by-word translation of a query into English with bilingual dictionaries (MUSE format).

The frozen sentence encoders lose part of a caption in translation (in the tower's space the nearest English
caption of a Czech one is its original 87 % of the time, of a German one 95 %), while English is what the text
tower was trained on most. SMALR's cross-lingual consistency (CLC) adds the query's machine translations at
search time; no translation model is available offline, but the MUSE bilingual dictionaries are (Conneau et al.,
"Word Translation Without Parallel Data", ICLR 2018). A word-for-word gloss is crude ("černý pes přeskakuje
kládu" → "black dog přeskakuje kládu"), yet it carries the nouns and adjectives the images are about.

Folder contract: ``en-XX.tsv`` files, each line ``english<TAB>other`` (the layout of ``../shared/data/lexicons``).
Each foreign word is glossed by the English candidate with the most translations across all the folder's
dictionaries (frequent, general words have many: a prior that needs no corpus); an unknown word by the entry
sharing its stem (inflection: ``vodě`` → ``voda``); otherwise it is kept (names, numbers).

Used by CLC's gloss translator (:mod:`training.translation.gloss`, POLYGLOT_CLC_LEXICONS_DIR). Scoring every
``/search`` query with its gloss (docs/results.md, round 5) left the serving path with the student (issue 23).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

WORD = re.compile(r"\w+")
MIN_STEM = 4  # shorter stems match unrelated words
MAX_SUFFIX = 3  # inflectional endings stripped when a word is not in the dictionary


class LexiconError(ValueError):
    pass


@dataclass(frozen=True)
class LexiconTranslator:
    words: dict[str, dict[str, str]]  # lang → foreign word → English gloss
    stems: dict[str, dict[str, str]]  # lang → stem of a foreign word → English gloss

    @property
    def languages(self) -> frozenset[str]:
        return frozenset(self.words)

    @classmethod
    def from_folder(cls, folder: Path, langs: Iterable[str] | None = None) -> LexiconTranslator:
        files = dictionary_files(folder)
        wanted = set(files) if langs is None else set(langs) & set(files)
        pairs = {lang: _read_pairs(path) for lang, path in files.items()}
        # The prior counts every dictionary of the folder, also those of languages not loaded.
        prior = Counter(en for rows in pairs.values() for en, other in rows if en != other)
        words: dict[str, dict[str, str]] = {}
        stems: dict[str, dict[str, str]] = {}
        for lang in sorted(wanted):
            candidates: defaultdict[str, list[str]] = defaultdict(list)
            for en, other in pairs[lang]:
                candidates[other].append(en)
            glosses = {other: _most_general(options, other, prior) for other, options in candidates.items()}
            words[lang] = glosses
            stems[lang] = _stem_table(glosses)
        return cls(words, stems)

    def translate(self, text: str, lang: str | None) -> str | None:
        """The English gloss of ``text``, or None when ``lang`` has no dictionary (English included)."""
        code = (lang or "").lower()
        glosses = self.words.get(code)
        if glosses is None:
            return None
        stems = self.stems[code]
        return " ".join(_gloss(word, glosses, stems) for word in WORD.findall(text.lower()))


def dictionary_files(folder: Path) -> dict[str, Path]:
    """Language code → its ``en-XX.tsv`` in ``folder``; a folder without any is an error."""
    files = {path.stem.split("-", 1)[1].lower(): path for path in sorted(Path(folder).glob("en-*.tsv"))}
    if not files:
        raise LexiconError(f"no bilingual dictionaries (en-XX.tsv) in {folder}")
    return files


def _most_general(options: list[str], word: str, prior: Counter[str]) -> str:
    """The candidate with the most translations; ties: a real translation before the identity pair, then
    alphabetical (deterministic)."""
    return min(options, key=lambda en: (-prior[en], en == word, en))


def _read_pairs(path: Path) -> list[tuple[str, str]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise LexiconError(f"{path}:{number}: expected 'english<TAB>translation', got {line[:80]!r}")
        rows.append((parts[0].lower(), parts[1].lower()))
    return rows


def _stem_table(glosses: dict[str, str]) -> dict[str, str]:
    """Each dictionary word and its prefixes down to MAX_SUFFIX characters shorter → its gloss (first word in
    sorted order wins a shared stem)."""
    table: dict[str, str] = {}
    for other in sorted(glosses):
        for cut in range(MAX_SUFFIX + 1):
            stem = other[: len(other) - cut]
            if len(stem) >= MIN_STEM:
                table.setdefault(stem, glosses[other])
    return table


def _gloss(word: str, glosses: dict[str, str], stems: dict[str, str]) -> str:
    if word in glosses:
        return glosses[word]
    for cut in range(1, MAX_SUFFIX + 1):
        stem = word[:-cut]
        if len(stem) >= MIN_STEM and stem in stems:
            return stems[stem]
    return word
