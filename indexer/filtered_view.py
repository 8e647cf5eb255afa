"""The image index seen through a photo filter, and the date order (shared by ``/search`` and ``polyglot search``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from indexer.image_index import Hit, ImageIndex
from indexer.search_filters import PhotoFilter


@dataclass
class FilteredImages:
    """What the query pipeline searches (``search``, ``vectors``) when a filter is set: only ``allowed`` ids,
    restricted inside the vector search (:mod:`indexer.store.filtered`)."""

    images: ImageIndex
    allowed: np.ndarray

    @classmethod
    def of(cls, images: ImageIndex, where: PhotoFilter) -> FilteredImages:
        return cls(images, images.store.filtered_ids(where))

    def search(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        return self.images.search(vectors, k, allowed=self.allowed)

    def vectors(self, ids: Sequence[int]) -> np.ndarray:
        return self.images.vectors(ids)


def by_date(images: ImageIndex, hits: list[Hit]) -> list[Hit]:
    """Hits ordered by capture time, newest first; undated ones after, in score order."""
    taken = images.store.taken([h.id for h in hits])
    dated = sorted((h for h in hits if taken.get(h.id)), key=lambda h: taken[h.id] or datetime.min, reverse=True)
    return dated + [h for h in hits if not taken.get(h.id)]
