"""Hybrid text encoder: several frozen sentence encoders side by side (spec ``muse+e5-small``).

In the spirit of SMALR's hybrid embeddings (Burns et al. 2020): no single bundled encoder is good everywhere —
mUSE v3 aligns en/de/fr/pt tightly but never saw Czech, multilingual-e5-small covers ~100 languages with a
looser alignment — so the text tower gets both and learns what to trust. Each part is l2-normalised; the
concatenation is scaled by 1/√k so that it stays a unit vector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from indexer.encoders.base import TextEncoder


class HybridTextEncoder(TextEncoder):
    def __init__(self, parts: Sequence[TextEncoder]) -> None:
        super().__init__()
        if len(parts) < 2:
            raise ValueError("a hybrid text encoder needs at least two parts")
        self._parts = list(parts)
        self.name = "+".join(part.name for part in self._parts)
        self.dim = sum(part.dim for part in self.parts)
        declared = [part.languages for part in self.parts]
        # A language is covered when any part covers it; "undeclared" (None) anywhere means "accept any code".
        self.languages = None if any(langs is None for langs in declared) else frozenset().union(*declared)  # type: ignore[arg-type]
        self._threads: int | None = None

    @property
    def parts(self) -> list[TextEncoder]:
        return self._parts

    @property
    def threads(self) -> int | None:
        """Intra-op threads, handed to every part that takes them (set before ``load``, as for the parts)."""
        return self._threads

    @threads.setter
    def threads(self, value: int | None) -> None:
        self._threads = value
        for part in self.parts:
            if hasattr(part, "threads"):
                part.threads = value

    def _load(self) -> None:
        for part in self.parts:
            if not part.loaded:
                part.load()

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.combine([part.predict(texts) for part in self.parts])

    def combine(self, embeddings: Sequence[np.ndarray]) -> np.ndarray:
        """Concatenate the parts' unit vectors into one unit vector (also used on cached part embeddings)."""
        return np.hstack(embeddings).astype(np.float32) / math.sqrt(len(embeddings))
