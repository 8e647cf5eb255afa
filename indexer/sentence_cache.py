"""Frozen sentence embeddings through the features cache: training, caption indexes and tag vocabularies all
embed their texts here, so a text is encoded once per encoder whoever asks first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.feature_cache import FeatureCache, text_key


def cached_sentences(
    encoder: TextEncoder,
    texts: Sequence[str],
    cache_dir: Path,
    batch_size: int = 256,
    progress: Callable[[int], object] | None = None,
) -> np.ndarray:
    """``encoder.predict(texts)``, reading and filling ``CACHE_DIR/features/<encoder>.sqlite``.

    A hybrid goes through each part's own cache (a ``muse+e5-small`` tower reuses what the ``muse`` and
    ``e5-small`` towers already embedded); its progress follows the last part, each text counted once.
    """
    if encoder.parts:  # a hybrid
        last = len(encoder.parts) - 1
        return encoder.combine(
            [
                cached_sentences(part, texts, cache_dir, batch_size, progress if i == last else None)
                for i, part in enumerate(encoder.parts)
            ]
        )
    cache = FeatureCache(cache_dir, encoder.cache_name, encoder.dim)

    def encode(positions: list[int]) -> np.ndarray:
        if not encoder.loaded:
            encoder.load()
        return encoder.predict([texts[p] for p in positions])

    try:
        return cache.compute([text_key(t) for t in texts], encode, batch_size=batch_size, progress=progress)
    finally:
        cache.close()
