"""The language of a query when the user does not say it (``/search`` without ``lang``, ``polyglot search``)."""

from __future__ import annotations

# langdetect's codes → the text encoders' codes.
DETECTED_ALIASES = {"zh-cn": "zh", "zh-tw": "zh"}


def warm_up() -> None:
    """langdetect loads its profiles lazily and not thread-safely: do it once, before concurrent calls."""
    from langdetect import DetectorFactory, detect_langs

    DetectorFactory.seed = 0  # deterministic answers for the same text
    detect_langs("warm up the language profiles")


def detect_language(text: str) -> tuple[str | None, float | None]:
    """``(code, probability)`` of the most likely language, or ``(None, None)`` when nothing can be detected
    (digits, emoji, punctuation). Pure Python and slow (milliseconds): call it off the event loop."""
    from langdetect import detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    try:
        best = detect_langs(text)[0]
    except (LangDetectException, IndexError):
        return None, None
    return DETECTED_ALIASES.get(best.lang, best.lang), round(float(best.prob), 4)
