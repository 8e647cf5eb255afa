"""A tiny synthetic caption data set and toy encoders, for tests and smoke runs of train/evaluate.

Each image shows two colours (left half, right half); its captions name them in en/de/fr. The toy image
encoder turns the two colours into a positive "pooled feature" with a large shared offset (like real pooled
CNN features); the toy text encoder is language-agnostic per colour word (like a multilingual sentence
encoder), so a tower trained on English alone transfers to German and French.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from indexer.encoders.base import ImageEncoder, TextEncoder

PALETTE = [(220, 30, 30), (30, 200, 30), (30, 30, 220), (230, 230, 30), (10, 10, 10), (245, 245, 245)]
WORDS = {
    "en": ["red", "green", "blue", "yellow", "black", "white"],
    "de": ["rot", "grün", "blau", "gelb", "schwarz", "weiß"],
    "fr": ["rouge", "vert", "bleu", "jaune", "noir", "blanc"],
}
TEMPLATES = {
    "en": ["a {} and {} picture", "{} next to {}"],
    "de": ["ein {} und {} Bild"],
    "fr": ["une image {} et {}"],
}


def make_dataset(root: Path, copies_train: int = 2, seed: int = 0) -> Path:
    """Writes images/, captions.jsonl and splits/{train,dev}.txt; every colour pair is in both splits."""
    rng = np.random.default_rng(seed)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "splits").mkdir(exist_ok=True)
    rows: list[dict[str, str]] = []
    splits: dict[str, list[str]] = {"train": [], "dev": []}
    number = 1000
    for copy in range(copies_train + 1):
        split = "dev" if copy == copies_train else "train"
        for left, right in itertools.combinations(range(len(PALETTE)), 2):
            name = f"{number}.jpg"
            number += 1
            pixels = np.zeros((16, 16, 3), dtype=np.float64)
            pixels[:, :8] = PALETTE[left]
            pixels[:, 8:] = PALETTE[right]
            pixels = np.clip(pixels + rng.normal(0, 4, pixels.shape), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / "images" / name, quality=95)
            splits[split].append(name)
            for lang, templates in TEMPLATES.items():
                for template in templates:
                    text = template.format(WORDS[lang][left], WORDS[lang][right])
                    rows.append({"image": name, "lang": lang, "text": text, "source": "synthetic"})
    with (root / "captions.jsonl").open("w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    for split, names in splits.items():
        (root / "splits" / f"{split}.txt").write_text("\n".join(names) + "\n", encoding="utf-8")
    return root


class ToyImageEncoder(ImageEncoder):
    name = "toy-image"
    dim = 16

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(1)
        self.projection = rng.uniform(0, 1, (len(PALETTE), self.dim))

    def _load(self) -> None:
        pass

    def _concepts(self, image: Image.Image) -> np.ndarray:
        array = np.asarray(image.convert("RGB"), dtype=np.float64)
        halves = (array[:, : array.shape[1] // 2], array[:, array.shape[1] // 2 :])
        onehot = np.zeros(len(PALETTE))
        for half in halves:
            colour = half.reshape(-1, 3).mean(axis=0)
            onehot[int(np.argmin(np.linalg.norm(np.array(PALETTE) - colour, axis=1)))] += 1
        return onehot

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        return np.stack([5.0 + self._concepts(image) @ self.projection for image in images])

    def _classify(self, features: np.ndarray) -> np.ndarray:
        concepts = (features - 5.0) @ np.linalg.pinv(self.projection)
        logits = 4 * concepts
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)

    @property
    def class_names(self) -> list[str]:
        return list(WORDS["en"])


class ToyTextEncoder(TextEncoder):
    name = "toy-text"
    dim = 12
    languages = frozenset(WORDS)

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(2)
        self.concepts = rng.normal(size=(len(PALETTE), self.dim))
        self.noise = {word: 0.2 * rng.normal(size=self.dim) for words in WORDS.values() for word in words}
        self.lookup = {word: index for words in WORDS.values() for index, word in enumerate(words)}

    def _load(self) -> None:
        pass

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        out = np.full((len(texts), self.dim), 0.05)
        for row, text in enumerate(texts):
            for word in text.split():
                if word in self.lookup:
                    out[row] += self.concepts[self.lookup[word]] + self.noise[word]
        return out
