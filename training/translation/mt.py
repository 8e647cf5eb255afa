"""An optional machine-translation backend: used only when a package that translates offline is installed and
has its language packages (Argos Translate); nothing is downloaded. :func:`find_mt_translator` returns None when
it is not importable, and the CLI/service then say so instead of failing later."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

Translate = Callable[[str, str, str], str]  # (text, source, target) → translation


class MachineTranslator:
    def __init__(self, translate: Translate, name: str) -> None:
        self._translate = translate
        self.name = name

    def translate(self, texts: Sequence[str], sources: Sequence[str | None], target: str) -> list[str | None]:
        out: list[str | None] = []
        for text, source in zip(texts, sources, strict=True):
            try:
                out.append(self._translate(text, source, target) or None if source else None)
            except Exception:  # no installed package for this pair: the query alone answers that slot
                out.append(None)
        return out


def find_mt_translator() -> MachineTranslator | None:
    """Argos Translate's installed language packages, if the package is importable."""
    try:
        module: Any = importlib.import_module("argostranslate.translate")
    except ImportError:
        return None
    return MachineTranslator(module.translate, "mt:argos")
