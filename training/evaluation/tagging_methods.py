"""What the tagging evaluation compares: the weightings of eq. 5 and the two kinds of English source tags.

``contextual`` takes W1/W2 from the command line; ``image-only`` (W2 = 0) and ``text-only`` (W1 = 0) are the two
halves of eq. 5 alone; ``lexicon`` (:mod:`training.evaluation.lexicon_baseline`) translates the source tags word by word.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from indexer.tagging.source_tags import MatrixCaptionRetriever, caption_source_tags, imagenet_source_tags

WEIGHTINGS = {"contextual": None, "image-only": (1.0, 0.0), "text-only": (0.0, 1.0)}
SOURCE_KINDS = ("imagenet", "captions")
METHOD_ORDER = ("contextual", "lexicon", "image-only", "text-only")  # columns of the tables, ours first


def source_tags_for(
    kind: str, features: np.ndarray, image_vectors: np.ndarray, encoder: Any, retriever: MatrixCaptionRetriever, n: int
) -> list[list[str]]:
    if kind == "imagenet":
        probabilities = encoder.classify(features)
        return [imagenet_source_tags(p, encoder.class_names, n) for p in probabilities]
    return [caption_source_tags(retriever.search(v, 10), n) for v in image_vectors]
