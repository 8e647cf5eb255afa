"""An adaptive relevance cut-off (issue 27): results stop where they stop standing out from the collection.

A fixed ``min_score`` cannot be right: text→image cosines of good matches differ by language, tower and query
(0.25–0.35 for the shipped towers, far higher image→image). Instead each query's own score distribution decides:
the scores of its best ``POOL`` candidates, less the ``SKIP`` best, describe "unrelated" (most photos of a
collection are unrelated to a query), each result is standardised against them (``z = (s − mean) / std``) and kept
while its ``z`` is at least ``z_min``. The best candidates are left out of that description because they are the
likeliest matches: with them in, a query with a strong match gets a wider spread and its next matches fall below
the line. Relevant photos stand out from the background by a margin that, unlike the cosine itself, is comparable
across languages and towers.

``DEFAULT_Z`` is what ``/search`` applies by default (issue 59), chosen on tuning sets and measured on the dev sets
in ``benchmarks/relevance_default.md``: R@10 within 2 % of no cut-off in every language (Flickr captions, ImageNet
class names in 13 languages), and more than half of the unrelated photos of a mixed library cut from a page of 20
in every language (the same rule with ``skip=0``, the background including the best candidates, cannot do both).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

POOL = 100  # candidates whose scores describe the query's distribution
SKIP = 2  # the best candidates left out of that description
DEFAULT_Z = 1.6
MIN_KEEP = 1  # the best match is always shown: an empty page says less than a weak first hit
MIN_POOL = 5  # fewer candidates (a library of a handful of photos) describe no distribution: all are kept


def cutoff_count(scores: Sequence[float], z_min: float = DEFAULT_Z, min_keep: int = MIN_KEEP, skip: int = SKIP) -> int:
    """How many of ``scores`` (best first, at least the ``POOL`` best when the collection has them) to keep."""
    values = np.asarray(scores, dtype=np.float64)
    if len(values) <= min_keep or len(values) < MIN_POOL:
        return len(values)
    pool = values[:POOL]
    background = pool[skip:] if len(pool) - skip >= 2 else pool
    spread = background.std()
    if spread <= 1e-9:
        return len(values)
    z = (values - background.mean()) / spread
    below = np.flatnonzero(z < z_min)
    keep = int(below[0]) if len(below) else len(values)
    return max(min_keep, keep)
