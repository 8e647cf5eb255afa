"""Tiny stand-ins for the tagger's models: a 3-d colour "CNN" and a word → vector table as the text tower.

The space has three axes: x = city/buildings (red images), y = animals (green), z = water (blue).
"bank" sits between city and water, so only the image can tell "banque" from "rive".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from indexer.encoders.base import ImageEncoder
from indexer.image_space import ImageSpace
from indexer.settings import TaggingSettings
from indexer.tagging.tagger import Tagger
from indexer.tagging.vocabulary import Vocabulary


def unit(*values: float) -> np.ndarray:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


WORDS = {
    # English source tags
    "bank": unit(1, 0, 1),
    "dog": unit(0, 1, 0.1),
    "lakeshore": unit(0.1, 0, 1),
    # French
    "banque": unit(1, 0, 0.2),
    "rive": unit(0.2, 0, 1),
    "chien": unit(0, 1, 0.15),
    # German
    "bank-de": unit(1, 0, 0.2),
    "ufer": unit(0.2, 0, 1),
    "hund": unit(0, 1, 0.15),
}


class FakeTextEmbedder:
    """Known words get their table vector; anything else a fixed pseudo-random unit vector."""

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str], langs: str | None = None) -> np.ndarray:
        self.calls += 1
        rows = []
        for text in texts:
            if text in WORDS:
                rows.append(WORDS[text])
            else:
                seed = sum(ord(c) for c in text)
                rows.append(unit(*np.random.default_rng(seed).normal(size=3)))
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 3), np.float32)


class ColourEncoder(ImageEncoder):
    """Features = mean RGB; the "classifier" always says bank > lakeshore > dog, so context must decide."""

    name = "fake-colour"
    dim = 3

    def _load(self) -> None:
        pass

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        return np.stack([np.asarray(image, dtype=np.float32).reshape(-1, 3).mean(axis=0) for image in images])

    def _classify(self, features: np.ndarray) -> np.ndarray:
        return np.tile(np.array([0.5, 0.3, 0.2], dtype=np.float32), (len(features), 1))

    @property
    def class_names(self) -> list[str]:
        return ["bank", "lakeshore (body of water)", "dog"]


def vocabulary(lang: str, words: Sequence[str], text: FakeTextEmbedder | None = None) -> Vocabulary:
    text = text or FakeTextEmbedder()
    return Vocabulary(lang, list(words), [10] * len(words), text.embed(list(words)), {"tower": "fake"})


def make_tagger(**settings: Any) -> Tagger:
    encoder = ColourEncoder()
    encoder.load()
    text = FakeTextEmbedder()
    vocabularies = {
        "fr": vocabulary("fr", ["banque", "rive", "chien"], text),
        "de": Vocabulary("de", ["bank", "ufer", "hund"], [3, 2, 1], text.embed(["bank-de", "ufer", "hund"])),
    }
    return Tagger(encoder, text, ImageSpace("l2"), vocabularies, TaggingSettings(**settings), fingerprint="fake")


def solid(colour: tuple[int, int, int]) -> Image.Image:
    return Image.new("RGB", (16, 16), colour)
