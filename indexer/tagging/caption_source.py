"""Adapter: the service's :class:`~indexer.captions.CaptionIndex` as a source of English captions for tagging."""

from __future__ import annotations

from typing import Any

import numpy as np

from indexer.tagging.source_tags import SOURCE_LANG


class CaptionIndexRetriever:
    """``search(vector, k)`` over the English part of a caption index (empty when it has no English)."""

    def __init__(self, index: Any) -> None:
        self.index = index  # duck-typed: languages() and search(vector, langs, k) → {lang: [hit.text, hit.score]}

    def search(self, image_vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        if SOURCE_LANG not in self.index.languages():
            return []
        hits = self.index.search(image_vector, [SOURCE_LANG], k).get(SOURCE_LANG, [])
        return [(hit.text, float(hit.score)) for hit in hits]
