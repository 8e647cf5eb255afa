"""The image index seen through a photo filter, and the date order (shared by ``/search`` and ``polyglot search``).

Importing it imports neither index (their types only): ``polyglot search`` orders by date on the index it opened,
which is a :class:`~indexer.store.read_only.ReadOnlyIndex` when it need not import SQLAlchemy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from indexer.search_filters import PhotoFilter
from indexer.store.backend import Hit

if TYPE_CHECKING:
    from indexer.image_index import ImageIndex
    from indexer.store.read_only import ReadOnlyIndex


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


def by_date(images: ImageIndex | ReadOnlyIndex, hits: list[Hit]) -> list[Hit]:
    """Hits ordered by capture time, newest first; undated ones after, in score order."""
    taken = images.store.taken([h.id for h in hits])
    dated = sorted((h for h in hits if taken.get(h.id)), key=lambda h: taken[h.id] or datetime.min, reverse=True)
    return dated + [h for h in hits if not taken.get(h.id)]
