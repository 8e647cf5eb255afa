"""Cleaning the names of a concept in one language: the right script, one spelling, the commonest name first.

The Open Multilingual Wordnet's files write names as their sources do (``../shared/data/concepts/README.md``): a
Wiktionary translation in another script (Korean Hanja 犬 beside 개, ``xewa`` under Arabic), vowel marks some
sources write and everyday text does not (Arabic ``كلْب`` beside ``كلب``), traditional Chinese beside simplified, a
Latin binomial copied from English (French ``canis familiaris``). :func:`clean_names` keeps the names a reader of
the language would write and orders them; :func:`name_order` decides which comes first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

_LATIN = ("LATIN",)
_CYRILLIC = ("CYRILLIC",)
_ARABIC = ("ARABIC",)
_DEVANAGARI = ("DEVANAGARI",)
# The scripts each language is written in (the first word(s) of a letter's Unicode name). Languages not listed
# are written in Latin letters.
SCRIPTS: dict[str, tuple[str, ...]] = {
    **{lang: _CYRILLIC for lang in ("be", "bg", "kk", "ky", "mk", "mn", "ru", "uk")},
    **{lang: _ARABIC for lang in ("ar", "fa", "ur")},
    **{lang: _DEVANAGARI for lang in ("hi", "mr")},
    "ku": _LATIN + _ARABIC,  # Kurmanji in Latin letters, Sorani in Arabic
    "hy": ("ARMENIAN",),
    "ka": ("GEORGIAN",),
    "km": ("KHMER",),
    "lo": ("LAO",),
    "my": ("MYANMAR",),
    "ml": ("MALAYALAM",),
    "ta": ("TAMIL",),
    "te": ("TELUGU",),
    "th": ("THAI",),
    "yi": ("HEBREW",),
    "zh": ("CJK UNIFIED", "CJK COMPATIBILITY"),
    "ja": ("CJK UNIFIED", "CJK COMPATIBILITY", "HIRAGANA", "KATAKANA"),
    "ko": ("HANGUL",),  # Hanja (犬 beside 개) is left out: Korean is written in Hangul
}
# Languages that never ship names: they stay languages the product was never given (the data README).
EXCLUDED = frozenset({"he", "el", "bn", "sw"})
# Characters that may join the letters of a name: space, hyphen, apostrophes, the Persian zero-width non-joiner,
# the Japanese long-vowel mark and middle dot, a full stop in an abbreviation ("St. Bernard").
_JOINERS = frozenset(" -'’\u200c\u200dー・.")
_ARABIC_MARKS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")  # harakat, tatweel
MAX_CHARS = 48


def scripts_of(lang: str) -> tuple[str, ...]:
    return SCRIPTS.get(lang, _LATIN)


def uses_latin(lang: str) -> bool:
    return "LATIN" in scripts_of(lang)


def in_script(name: str, lang: str) -> bool:
    """Every letter of ``name`` is in a script ``lang`` is written in, and it has at least one letter (digits
    inside a name are allowed: "7-Eleven" is not a concept here, but Japanese "3輪車" may be)."""
    scripts = scripts_of(lang)
    letters = 0
    for char in name:
        if char in _JOINERS or char.isdigit():
            continue
        category = unicodedata.category(char)
        if category[0] not in "LM":
            return False
        if category[0] == "M":  # a mark joins the letter before it (Devanagari vowel signs, accents)
            continue
        if not unicodedata.name(char, "").startswith(scripts):
            return False
        letters += 1
    return letters > 0


def normalise_name(name: str, lang: str, simplify: Callable[[str], str] | None = None) -> str:
    """The name as a reader writes it: NFC, single spaces, no underscores, no parenthesised note, Arabic without
    vowel marks or tatweel, Chinese in simplified characters (``simplify``: OpenCC t2s)."""
    text = unicodedata.normalize("NFC", name).replace("_", " ")
    text = re.sub(r"\s*[(（][^)）]*[)）]\s*", " ", text)
    if lang in ("ar", "fa", "ur"):
        text = _ARABIC_MARKS.sub("", text)
    if lang == "zh" and simplify is not None:
        text = simplify(text)
    return " ".join(text.split()).strip(" -'")


@dataclass(frozen=True)
class Candidate:
    """A name of one concept in one language, with what decides its place among the concept's names."""

    name: str
    sources: int  # how many sources list it (Wiktionary and the language's wordnet agreeing count twice)
    first_seen: int  # its first row in the language's file (sources list the main translation first)


def fold(name: str) -> str:
    return name.casefold()


def name_order(
    candidates: Sequence[Candidate],
    shares: Mapping[str, int],
    english: Iterable[str],
    translations: Mapping[str, frozenset[str]] | None = None,
) -> list[str]:
    """The names commonest first.

    A name that translates one of the concept's English lemmas in a bilingual dictionary comes first
    (``translations``: folded word → the folded English words it translates; the shipped tag vocabulary's pairs);
    then a name that several sources give; then a name few concepts share (``shares``: how many concepts
    of the language have it, folded): a name of many concepts is ambiguous (French "bal" is also the dance; for
    the toy, "balle" and "ballon" say more); a copy of a secondary English lemma (a Latin binomial, "canis
    familiaris") goes last; ties keep the sources' order."""
    english_list = [fold(word) for word in english]
    secondary = set(english_list[1:]) - set(english_list[:1])

    english_set = set(english_list)

    def key(candidate: Candidate) -> tuple[int, int, int, int, int]:
        folded = fold(candidate.name)
        ambiguity = shares.get(folded, 1)
        translated = bool(translations and translations.get(folded, frozenset()) & english_set)
        return (
            int(folded in secondary),
            int(not translated),
            -candidate.sources,
            min(ambiguity, 4),
            candidate.first_seen,
        )

    return [candidate.name for candidate in sorted(candidates, key=key)]


def merge_spellings(names: Iterable[tuple[str, str, int]], lang: str) -> list[Candidate]:
    """``(name, source, row)`` of one concept → one candidate per spelling (folded), counting distinct sources.
    The lower-case spelling is kept where sources differ only in case (French "Golfette"/"golfette"), except in
    German, which capitalises its nouns."""
    merged: dict[str, tuple[str, set[str], int]] = {}
    for name, source, row in names:
        key = fold(name)
        if key in merged:
            shown, sources, first = merged[key]
            if lang != "de" and name.islower() and not shown.islower():
                shown = name
            sources.add(source)
            merged[key] = (shown, sources, min(first, row))
        else:
            merged[key] = (name, {source}, row)
    return [Candidate(shown, len(sources), first) for shown, sources, first in merged.values()]


def clean_names(
    rows: Iterable[tuple[str, str, int]],
    lang: str,
    english: Sequence[str],
    simplify: Callable[[str], str] | None = None,
) -> tuple[list[tuple[str, str, int]], dict[str, int]]:
    """The rows of one concept that pass: normalised, in script, not too long, not the English name in a language
    written in another script. Returns the kept rows and why the others went (``script``, ``english``, ``long``)."""
    kept: list[tuple[str, str, int]] = []
    rejected = {"script": 0, "english": 0, "long": 0}
    english_folded = {fold(word) for word in english}
    for name, source, row in rows:
        cleaned = normalise_name(name, lang, simplify)
        if not cleaned or len(cleaned) > MAX_CHARS:
            rejected["long"] += 1
        elif not in_script(cleaned, lang):
            rejected["script"] += 1
        elif not uses_latin(lang) and fold(cleaned) in english_folded:
            rejected["english"] += 1
        else:
            kept.append((cleaned, source, row))
    return kept, rejected
