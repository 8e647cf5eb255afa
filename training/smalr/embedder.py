"""The SMALR tower behind the query pipeline's :class:`~indexer.tower.TextEmbedder` interface.

Its "sentence encoder" is the tower's own text model: :class:`SmalrEncoder` turns texts into joint-space vectors
(guessing each text's language from the vocabulary, since ``predict`` is given none), and
:class:`SmalrEmbedder.embed` passes the query's language through so the language-specific rows are used.
``dim = 0``: no features cache keyed by encoder name (two SMALR towers would share one).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.tower import CONFIG_NAME, TextEmbedder
from training.smalr.tower import KIND, TEXT_ENCODER, SmalrTower


def is_smalr_folder(folder: Path) -> bool:
    path = Path(folder) / CONFIG_NAME
    if not path.exists():
        return False
    return bool(json.loads(path.read_text(encoding="utf-8")).get("kind") == KIND)


class SmalrEncoder(TextEncoder):
    name = TEXT_ENCODER
    dim = 0

    def __init__(self, tower: SmalrTower) -> None:
        super().__init__()
        self.tower = tower
        self.languages = frozenset(tower.vocab.languages)

    def _load(self) -> None:
        pass  # the weights came with the tower

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        return self.tower.encode(texts, [None] * len(texts))


class SmalrEmbedder(TextEmbedder):
    tower: SmalrTower  # type: ignore[assignment]

    def __init__(self, tower: SmalrTower) -> None:
        super().__init__(tower, SmalrEncoder(tower))  # type: ignore[arg-type]

    @classmethod
    def from_folder(cls, folder: Path) -> SmalrEmbedder:
        return cls(SmalrTower.from_pretrained(folder))

    def embed(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        per_text = [langs] * len(texts) if langs is None or isinstance(langs, str) else list(langs)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.tower.embed(self.tower.encode(texts, per_text))
