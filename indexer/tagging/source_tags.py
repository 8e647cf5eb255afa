"""English source tags for an image, from two taggers the project already has.

* ``imagenet``: the frozen CNN's own top ImageNet classes, names cleaned into plain lower-case words
  ("kite (bird of prey)" → "kite", "handrail / baluster" → "handrail").
* ``captions``: content words of the English captions that image→caption retrieval returns for the image,
  ranked by the summed similarity of the captions they occur in (a word in many close captions first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Protocol

import numpy as np

from indexer.tagging.text import content_words, normalise_text

SOURCE_LANG = "en"


class SourceKind(StrEnum):
    CONCEPTS = "concepts"  # no English source tags: the lexicon's concepts ranked by the photo (tagging/concepts.py)
    IMAGENET = "imagenet"
    CAPTIONS = "captions"


class CaptionRetriever(Protocol):
    """Anything that returns the English captions closest to an image vector: [(text, cosine), ...]."""

    def search(self, image_vector: np.ndarray, k: int) -> list[tuple[str, float]]: ...


def clean_class_name(name: str) -> str:
    name = re.sub(r"\([^)]*\)", " ", name)  # drop glosses: "drake (male duck)"
    name = name.split("/")[0]  # first of alternatives: "cardboard box / carton"
    return " ".join(normalise_text(name).replace("'s", "").split())


def imagenet_source_tags(probabilities: np.ndarray, class_names: Sequence[str], n: int) -> list[str]:
    """The ``n`` most probable ImageNet classes as clean English tags (duplicates after cleaning merged)."""
    order = np.argsort(-np.asarray(probabilities).reshape(-1), kind="stable")
    tags: list[str] = []
    for index in order:
        tag = clean_class_name(class_names[int(index)])
        if tag and tag not in tags:
            tags.append(tag)
        if len(tags) == n:
            break
    return tags


def caption_source_tags(captions: Sequence[tuple[str, float]], n: int) -> list[str]:
    """The ``n`` content words with the highest summed caption similarity (a word counts once per caption)."""
    weight: dict[str, float] = {}
    for text, similarity in captions:
        for word in dict.fromkeys(content_words(text, SOURCE_LANG)):
            # Similarities can be negative for far captions; those must not push a word down below unseen ones.
            weight[word] = weight.get(word, 0.0) + max(float(similarity), 0.0) + 1e-6
    ranked = sorted(weight.items(), key=lambda item: (-item[1], item[0]))
    return [word for word, _ in ranked[:n]]


class MatrixCaptionRetriever:
    """Exact inner-product search over a (n, d) matrix of unit caption vectors (thread-safe: read-only)."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if len(texts) != len(vectors):
            raise ValueError(f"{len(texts)} captions but {len(vectors)} vectors")
        self.texts = list(texts)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def search(self, image_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        if not self.texts:
            return []
        sims = self.vectors @ np.asarray(image_vector, dtype=np.float32).reshape(-1)
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(self.texts[i], float(sims[i])) for i in top]
