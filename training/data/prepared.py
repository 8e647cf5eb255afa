"""A split ready for training or evaluation: frozen image features + frozen caption embeddings, in memory.

Features come from the shared :class:`~indexer.feature_cache.FeatureCache` (computed once, then reused by every
run and by the indexer), so a training run on cached features only pays for the tower.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.encoders.base import ImageEncoder, TextEncoder
from training.data.dataset import CaptionDataset, DatasetError, load_dataset
from training.data.features import image_features, text_embeddings


@dataclass
class PreparedSplit:
    images: list[str]
    image_features: np.ndarray  # (n_images, image_dim) raw pooled CNN features
    caption_image: np.ndarray  # (n_captions,) index into ``images``
    caption_lang: np.ndarray  # (n_captions,) language code per caption
    caption_text: list[str]
    text_embeddings: np.ndarray  # (n_captions, text_dim) unit sentence embeddings
    caption_source: np.ndarray | None = None  # (n_captions,) the ``source`` field of each caption, when known

    @property
    def languages(self) -> list[str]:
        return sorted(set(self.caption_lang.tolist()))

    def lang_rows(self, lang: str) -> np.ndarray:
        return np.flatnonzero(self.caption_lang == lang)


def check_languages(dataset: CaptionDataset, langs: Sequence[str] | None, split: str) -> None:
    present = set(dataset.languages())
    unknown = sorted(set(langs or []) - present)
    if unknown:
        raise DatasetError(
            f"language(s) {', '.join(unknown)} have no captions in split {split!r} "
            f"(languages present: {', '.join(sorted(present)) or 'none'})"
        )


def prepare_split(
    root: Path,
    split: str,
    langs: Sequence[str] | None,
    image_encoder: ImageEncoder,
    text_encoder: TextEncoder | None,
    cache_dir: Path,
    captions_per_lang: int | None = None,
    max_images: int | None = None,
    extra_captions: Sequence[Path] = (),
) -> PreparedSplit:
    """``captions_per_lang``: keep only the first N captions of each image in each language (file order).
    ``max_images``: keep a fixed random subset of N images (``random.Random(0)`` shuffle of the sorted ids), e.g.
    to train on the part of a split whose text embeddings are already cached. ``text_encoder`` None: no sentence
    embeddings (the served evaluation embeds the captions through the query pipeline). ``extra_captions``: more
    JSONL files of the same schema (e.g. ``../shared/data/more-langs``), their rows of the split's images added."""
    root = Path(root)
    if not (root / "captions.jsonl").exists():
        raise DatasetError(f"{root} is not a caption data set: {root / 'captions.jsonl'} is missing")
    dataset = load_dataset(root, split, extra=extra_captions)
    check_languages(dataset, langs, split)
    if langs:
        dataset.captions = [caption for caption in dataset.captions if caption.lang in set(langs)]
    if max_images is not None and max_images < len(dataset.images):
        order = sorted(dataset.images)
        random.Random(0).shuffle(order)
        keep = set(order[:max_images])
        dataset.images = [image for image in dataset.images if image in keep]
    missing = [image for image in dataset.images if not dataset.image_path(image).exists()]
    if missing:
        raise DatasetError(
            f"{len(missing)} image(s) of split {split!r} are missing, e.g. {dataset.image_path(missing[0])}"
        )
    position = {image: index for index, image in enumerate(dataset.images)}
    captions = [caption for caption in dataset.captions if caption.image in position]
    if captions_per_lang is not None:
        counts: dict[tuple[str, str], int] = {}
        kept = []
        for caption in captions:
            key = (caption.image, caption.lang)
            counts[key] = counts.get(key, 0) + 1
            if counts[key] <= captions_per_lang:
                kept.append(caption)
        captions = kept
    if not captions:
        raise DatasetError(f"split {split!r} has no captions" + (f" in {', '.join(langs)}" if langs else ""))
    paths = [dataset.image_path(image) for image in dataset.images]
    features = image_features(image_encoder, paths, cache_dir, desc=split)
    texts = [caption.text for caption in captions]
    if text_encoder is None:
        embeddings = np.zeros((len(texts), 0), dtype=np.float32)
    else:
        embeddings = text_embeddings(text_encoder, texts, cache_dir, desc=f"{split} captions")
    return PreparedSplit(
        images=list(dataset.images),
        image_features=features,
        caption_image=np.array([position[caption.image] for caption in captions], dtype=np.int64),
        caption_lang=np.array([caption.lang for caption in captions]),
        caption_text=texts,
        text_embeddings=embeddings,
        caption_source=np.array([caption.source for caption in captions]),
    )
