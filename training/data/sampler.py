"""Mini-batches of *distinct* images, one caption each.

An epoch visits every training image once, in a random order, with one caption drawn for it: first a language
uniformly among the image's training languages (so French and Czech, with one caption per image, are not drowned
by English's nine), then a caption of that language uniformly. Because an image appears at most once per batch,
no two captions of the same image are ever treated as negatives of each other (the losses mask them anyway).

With ``partners`` (for the caption–caption loss) each image also brings a second caption, in another of its
languages, drawn the same way; images with a single language bring none (-1).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class DistinctImageBatches:
    def __init__(
        self, caption_image: np.ndarray, caption_lang: np.ndarray, batch_size: int, seed: int, partners: bool = False
    ) -> None:
        if batch_size < 2:
            raise ValueError("batch size must be at least 2 (negatives are mined inside the batch)")
        self.batch_size = batch_size
        self.partners = partners
        self.rng = np.random.default_rng(seed)
        groups: dict[int, dict[str, list[int]]] = {}
        for row, (image, lang) in enumerate(zip(caption_image.tolist(), caption_lang.tolist(), strict=True)):
            groups.setdefault(image, {}).setdefault(lang, []).append(row)
        self.images = np.array(sorted(groups), dtype=np.int64)
        self.groups = [list(groups[int(image)].values()) for image in self.images]
        if len(self.images) < 2:
            raise ValueError("need captions for at least two images to train")

    def __len__(self) -> int:
        return -(-len(self.images) // self.batch_size)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
        """Yields (caption rows, image indices, partner rows or None) per batch; a last batch of one image is
        dropped."""
        order = self.rng.permutation(len(self.images))
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            if len(chosen) < 2:
                continue
            rows = np.empty(len(chosen), dtype=np.int64)
            partners = np.full(len(chosen), -1, dtype=np.int64) if self.partners else None
            for k, position in enumerate(chosen):
                by_lang = self.groups[position]
                first = self.rng.integers(len(by_lang))
                rows[k] = by_lang[first][self.rng.integers(len(by_lang[first]))]
                if partners is not None and len(by_lang) > 1:
                    other = by_lang[(first + 1 + self.rng.integers(len(by_lang) - 1)) % len(by_lang)]
                    partners[k] = other[self.rng.integers(len(other))]
            yield rows, self.images[chosen], partners
