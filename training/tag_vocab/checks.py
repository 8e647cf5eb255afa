"""Is a word written in its language? A script check (every letter in the language's scripts) and a language
identification check (py3langid over its 97 languages: not another language's word with high confidence).

Single words are short texts for a character n-gram model: over all 97 languages it rarely gives any language more
than 0.3 for a real word, so ``HIGH_CONFIDENCE`` (0.5) marks words whose n-grams belong to one other language
unmistakably ("beach", "swimming" as French or German words). Languages that share most everyday words are not
told apart by one word (Norwegian/Danish/Swedish "hund", Croatian/Bosnian "pas", Spanish/Portuguese "mesa"), so a
word detected as a close relative of its language (``RELATIVES``) is not counted as another language.
"""

from __future__ import annotations

import threading
import unicodedata
from functools import lru_cache
from typing import Any

HIGH_CONFIDENCE = 0.5

# Unicode script of every letter, by the prefix of its character name.
_LATIN = ("LATIN",)
_LATIN_LANGS = "af bs ca cs da de en es et fi fr hr hu id it lt lv ms nl no pl pt ro sk sl sq sv tl tr vi"
SCRIPTS: dict[str, tuple[str, ...]] = {
    **{lang: _LATIN for lang in _LATIN_LANGS.split()},
    **{lang: ("CYRILLIC",) for lang in ("bg", "mk", "ru", "uk")},
    "ar": ("ARABIC",),
    "fa": ("ARABIC",),
    "hi": ("DEVANAGARI",),
    "ta": ("TAMIL",),
    "th": ("THAI",),
    "zh": ("CJK UNIFIED",),
    "ja": ("CJK UNIFIED", "HIRAGANA", "KATAKANA"),
    "ko": ("HANGUL",),
}

# Groups of languages whose everyday words a one-word language identification cannot tell apart (py3langid codes).
_GROUPS = (
    {"no", "nn", "da", "sv", "fo"},
    {"bs", "hr", "sr", "sl"},
    {"bg", "mk", "ru", "uk", "be", "sr"},
    {"cs", "sk"},
    {"id", "ms", "jv", "tl"},
    {"es", "pt", "gl", "ca", "it", "oc", "an", "ext", "ast", "lij", "vec"},
    {"fr", "oc", "wa", "ca"},
    {"nl", "af", "fy", "lb", "de"},
    {"ar", "fa", "ur", "ps", "ary", "arz", "sdh", "ku"},
    {"zh", "ja", "wuu", "yue"},
    {"lt", "lv", "ltg"},
    {"hi", "mr", "ne", "sa", "gom"},
)
RELATIVES: dict[str, frozenset[str]] = {
    lang: frozenset().union(*(group for group in _GROUPS if lang in group)) for lang in SCRIPTS
}
# Characters that may join the letters of a word or phrase: hyphen, space, apostrophe (French "arc-en-ciel",
# Italian "l'acqua"), the Persian zero-width non-joiner, Japanese's long-vowel mark and middle dot.
_JOINERS = frozenset("- '\u200cー・")


def in_script(word: str, lang: str) -> bool:
    """Every letter of ``word`` belongs to a script ``lang`` is written in (and it has at least one letter)."""
    scripts = SCRIPTS[lang]
    letters = 0
    for char in word:
        if char in _JOINERS:
            continue
        category = unicodedata.category(char)
        if category[0] not in "LM":  # letters and the marks that join them (Devanagari vowel signs)
            return False
        name = unicodedata.name(char, "")
        if not name.startswith(scripts):
            return False
        letters += category[0] == "L"
    return letters > 0


_identifier: Any = None
_lock = threading.RLock()  # _ranked holds it while _model may take it


def _model() -> Any:
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _identifier


@lru_cache(maxsize=200_000)
def _probabilities(word: str) -> tuple[float, ...]:
    """py3langid's probability of each of its languages (in ``_labels()`` order) for ``word``. Its ``_decide`` is
    what ``classify`` and ``rank`` call; read once per word, without ``rank``'s sorting of 97 languages."""
    with _lock:  # one model, read by one thread at a time
        return tuple(float(p) for p in _model()._decide(word))


@lru_cache(maxsize=1)
def _labels() -> dict[str, int]:
    with _lock:
        return {str(code): i for i, code in reversed(list(enumerate(_model().nb_classes)))}


def detected(word: str) -> tuple[str, float]:
    """py3langid's most likely language of ``word`` among all it knows, with its probability."""
    probabilities = _probabilities(word)
    best = max(range(len(probabilities)), key=probabilities.__getitem__)
    with _lock:
        return str(_model().nb_classes[best]), probabilities[best]


def foreign_with_confidence(word: str, lang: str) -> tuple[str, float] | None:
    """``(language, probability)`` when ``word`` is detected with high confidence as a language that is neither
    ``lang`` nor a close relative of it; None otherwise."""
    code, probability = detected(word)
    if probability >= HIGH_CONFIDENCE and code != lang and code not in RELATIVES.get(lang, frozenset()):
        return code, probability
    return None


def english_rather_than(word: str, lang: str) -> float:
    """P(English) of ``word`` when the choice is only between English and ``lang``: the two languages'
    probabilities renormalised (py3langid's probabilities are a softmax, so this is what restricting its model to
    the two languages gives)."""
    probabilities, labels = _probabilities(word), _labels()
    english = probabilities[labels["en"]]
    other = probabilities[labels[lang]] if lang in labels else 0.0
    return english / (english + other) if english + other > 0 else 0.5
