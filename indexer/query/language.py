"""The language of a query when the user does not say it (``/search`` without ``lang``, ``polyglot search``).

py3langid (the langid.py model, 97 languages, shipped in the wheel): on dev captions of en/de/fr/cs/pt/zh/ja/
ar/es/uk it was right 99.1 % of the time (mean; 96.6 % in the worst language, Chinese) in ~50 µs a query, where
langdetect was right 98.4 % (95.2 %) in ~1.8 ms, and lingua's high-accuracy mode 99.3 % in ~1.8 ms after 47 s
and 1.3 GB of loading (benchmarks/language_detection.md). Deterministic, thread-safe once loaded.
"""

from __future__ import annotations

import threading
from typing import Any

_identifier: Any = None
_lock = threading.Lock()


def _load() -> Any:
    global _identifier
    with _lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    return _identifier


def warm_up() -> None:
    """Load the model (seconds) before the first query rather than during it."""
    _load().classify("warm up the language model")


def detect_language(text: str) -> tuple[str | None, float | None]:
    """``(code, probability)`` of the most likely language, or ``(None, None)`` when nothing can be detected
    (digits, emoji, punctuation). Tens of microseconds for a query: cheaper than a hop to a thread."""
    if not any(char.isalpha() for char in text):
        return None, None
    code, probability = _load().classify(text)
    return str(code), round(float(probability), 4)
