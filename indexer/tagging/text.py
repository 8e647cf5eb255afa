"""Words out of captions: tokenisation that copes with accents and elision, and per-language stop words.

Tokens are runs of letters (any script), optionally joined by hyphens ("t-shirt", "jeans-jacke"); apostrophes
split, so the French elided articles in "l'homme", "d'eau" become "l"/"d" + the noun and the one-letter
article is dropped by the length filter. Digits never form tokens. Text is NFC-normalised and lower-cased.

Stop words come from the ``stop-words`` package (python-stop-words: de, fr, cs, pt, en, es, it, ru, pl, tr
…). Its lists were chosen over stopwords-iso, which removes frequent caption nouns such as "mann",
"menschen", "gens", "pessoas". A few English entries of ``stop-words`` are photo-content nouns ("man",
"men", "group", "face", "area"); they are kept as words because they are the most common things a photo shows.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

log = logging.getLogger(__name__)

_TOKEN = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
MIN_WORD_CHARS = 2

# Content nouns that the ``stop-words`` lists include; see the module docstring.
_KEEP = {"en": frozenset({"man", "men", "group", "face", "area"})}


def normalise_text(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (letters and inner hyphens only; at least two characters)."""
    return [token for token in _TOKEN.findall(normalise_text(text)) if len(token) >= MIN_WORD_CHARS]


@lru_cache(maxsize=64)
def stop_words(lang: str) -> frozenset[str]:
    """Stop words of ``lang`` (ISO 639-1), lower-cased and NFC; empty (with a debug log) when none are known."""
    from stop_words import StopWordError, get_stop_words

    try:
        words = get_stop_words(lang.lower())
    except StopWordError:
        log.debug("no stop-word list for language", extra={"lang": lang})
        return frozenset()
    keep = _KEEP.get(lang.lower(), frozenset())
    return frozenset(normalise_text(word) for word in words) - keep


def content_words(text: str, lang: str) -> list[str]:
    """Tokens of ``text`` that are not stop words of ``lang``, in order (repeats kept)."""
    stops = stop_words(lang)
    return [token for token in tokenize(text) if token not in stops]


def count_content_words(texts: Iterable[str], lang: str, forms: dict[str, Counter[str]] | None = None) -> Counter[str]:
    """Content-word counts; with ``forms``, also how each word is written (German "Hund", French "homme").

    A text's first word is capitalised by the sentence, not the language, so it only counts as a written form
    when the word is never seen elsewhere (weight 0.001 instead of 1).
    """
    counts: Counter[str] = Counter()
    stops = stop_words(lang)
    for text in texts:
        surface = [t for t in _TOKEN.findall(unicodedata.normalize("NFC", text)) if len(t) >= MIN_WORD_CHARS]
        for position, token in enumerate(surface):
            word = token.lower()
            if word in stops:
                continue
            counts[word] += 1
            if forms is not None:
                forms.setdefault(word, Counter())[token] += 0.001 if position == 0 else 1  # type: ignore[assignment]
    return counts


def written_form(word: str, forms: dict[str, Counter[str]] | None) -> str:
    """The most frequent way ``word`` is written (ties: the lower-case form), or ``word`` itself."""
    seen = (forms or {}).get(word)
    if not seen:
        return word
    return max(seen.items(), key=lambda item: (item[1], item[0] == word))[0]
