"""An adaptive relevance cut-off (issue 27): results stop where they stop standing out from the collection.

A fixed ``min_score`` cannot be right: text→image cosines of good matches differ by language, tower and query
(0.25–0.35 for the shipped towers, far higher image→image). Instead each query's own score distribution decides:
the scores of its best ``POOL`` candidates are standardised (``z = (s − mean) / std``) and a result is kept while
its ``z`` is at least ``z_min``. Most photos of a collection are unrelated to a query, so the pool's mean and
spread describe "unrelated"; relevant photos stand out from it by a margin that, unlike the cosine itself, is
comparable across languages and towers. Measured on the dev split (one known relevant photo per caption):
``benchmarks/relevance_cutoff.md`` — how many results it removes and how often it loses the relevant one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

POOL = 100  # candidates whose scores describe the query's distribution
DEFAULT_Z = 1.5
MIN_KEEP = 1  # the best match is always shown: an empty page says less than a weak first hit


def cutoff_count(scores: Sequence[float], z_min: float = DEFAULT_Z, min_keep: int = MIN_KEEP) -> int:
    """How many of ``scores`` (best first, at least the ``POOL`` best when the collection has them) to keep."""
    values = np.asarray(scores, dtype=np.float64)
    if len(values) <= min_keep:
        return len(values)
    pool = values[:POOL]
    spread = pool.std()
    if spread <= 1e-9:
        return len(values)
    z = (values - pool.mean()) / spread
    below = np.flatnonzero(z < z_min)
    keep = int(below[0]) if len(below) else len(values)
    return max(min_keep, keep)
