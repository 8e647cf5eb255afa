"""Citation forms (dictionary headwords) of a language's words, from simplemma's lemma lists (offline, in its
wheel; MIT code, lemma data from Wiktionary/Kaikki, Měchura's lemmatization lists (ODbL), FreeLing, spaCy's
lookups, UniMorph and Wikinflection: indexer/assets/tags/README.md).

Two uses in :mod:`.build`, both choosing among MUSE's own words (no simplemma word is ever added):

* an inflected form folded with its citation form is replaced by it: MUSE lists a word's translations in
  alphabetical order, so "krzesła" (chairs) comes before "krzesło" (chair) and used to be the one kept;
* an animal class name's identity pair ("koala" in French) counts as the language's word when the language's lemma
  list holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

# MUSE language codes whose simplemma data goes by another name (Bosnian and Croatian share the Serbo-Croatian
# list; Norwegian is Bokmål).
_SIMPLEMMA_CODES = {"bs": "hbs", "hr": "hbs", "no": "nb"}

LemmaOf = Callable[[str], "str | None"]


def _supported() -> frozenset[str]:
    from simplemma.strategies.dictionaries.dictionary_factory import SUPPORTED_LANGUAGES

    return frozenset(SUPPORTED_LANGUAGES)


@cache
def lemma_lookup(lang: str) -> LemmaOf | None:
    """``lemma_of(word)``: the citation form (lower case) of a word, as written (German nouns capitalised: case
    tells German nouns from verbs), that the language's lemma list knows, else None; None for a language simplemma
    has no list for (zh, ja, ko, th, ...)."""
    code = _SIMPLEMMA_CODES.get(lang, lang)
    if code not in _supported():
        return None
    import simplemma

    def lemma_of(word: str) -> str | None:
        if not simplemma.is_known(word, lang=code):
            return None
        # German lemmas come capitalised ("Hund"); the vocabulary's keys are lower case.
        return str(simplemma.lemmatize(word, lang=code)).lower()

    return lemma_of
