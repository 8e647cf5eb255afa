"""Compute (once, cached) the frozen image features and sentence embeddings a training run needs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.feature_cache import FeatureCache
from indexer.images import file_hash, load_image
from indexer.sentence_cache import cached_sentences


def image_features(
    encoder: ImageEncoder, paths: Sequence[Path], cache_dir: Path, batch_size: int = 32, desc: str = "images"
) -> np.ndarray:
    cache = FeatureCache(cache_dir, encoder.cache_name, encoder.dim)
    keys = [file_hash(path) for path in tqdm(paths, desc=f"hash {desc}", unit="img", leave=False)]
    with tqdm(total=len(paths), desc=f"{encoder.name} {desc}", unit="img") as bar:
        return cache.compute(
            keys,
            lambda positions: _encode_images(encoder, [paths[p] for p in positions]),
            batch_size=batch_size,
            progress=bar.update,
        )


def _encode_images(encoder: ImageEncoder, paths: Sequence[Path]) -> np.ndarray:
    if not encoder.loaded:
        encoder.load()
    return encoder.predict([load_image(path) for path in paths])


def text_embeddings(
    encoder: TextEncoder, texts: Sequence[str], cache_dir: Path, batch_size: int = 256, desc: str = "texts"
) -> np.ndarray:
    with tqdm(total=len(texts), desc=f"{encoder.name} {desc}", unit="text") as bar:
        return cached_sentences(encoder, texts, cache_dir, batch_size=batch_size, progress=bar.update)
