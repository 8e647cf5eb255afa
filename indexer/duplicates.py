"""Exact and near-duplicate photos of an image index (``GET /duplicates``, ``polyglot index duplicates``).

* **exact**: files with the same content hash (the same bytes under several paths);
* **near**: photos whose image-space vectors have a cosine of at least ``threshold`` — the same shot
  re-encoded, resized, lightly cropped or edited. Found with the index's own k-nearest-neighbour search, in
  batches (each photo's ``NEIGHBOURS`` nearest), and grouped transitively (union-find): A~B and B~C make one group.

The default threshold (``DEFAULT_THRESHOLD``) was measured on copies of dev photos (JPEG re-encoding at q50,
halving, 80 % centre crops, and all three together) against the nearest distinct dev photo:
``benchmarks/duplicates.md`` gives precision and recall per threshold and the command that measured them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from indexer.image_index import ImageIndex

DEFAULT_THRESHOLD = 0.85
NEIGHBOURS = 8
BATCH = 2_048


@dataclass
class DuplicateGroup:
    kind: str  # "exact" or "near"
    ids: list[int]
    scores: dict[int, float] = field(default_factory=dict)  # near: each member's best cosine within the group


def find_duplicates(index: ImageIndex, threshold: float = DEFAULT_THRESHOLD) -> list[DuplicateGroup]:
    """Exact groups first (largest first), then near groups (largest, then most similar, first)."""
    keys = index.store.id_keys()
    by_hash: dict[str, list[int]] = defaultdict(list)
    for id_, sha, _ in keys:
        by_hash[sha].append(id_)
    groups = [DuplicateGroup("exact", sorted(ids)) for ids in by_hash.values() if len(ids) > 1]
    # One representative per content: exact copies are not near duplicates of each other.
    representative = {ids[0]: ids for ids in by_hash.values()}
    ids = np.asarray(sorted(representative), dtype=np.int64)
    parent = {int(i): int(i) for i in ids}
    best: dict[int, float] = {}

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        queries = index.vectors(chunk.tolist())
        for id_, hits in zip(chunk.tolist(), index.search(queries, NEIGHBOURS + 1), strict=True):
            for hit in hits:
                if hit.id == id_ or hit.id not in parent or hit.score < threshold:
                    continue
                best[id_] = max(best.get(id_, -1.0), hit.score)
                best[hit.id] = max(best.get(hit.id, -1.0), hit.score)
                a, b = find(id_), find(hit.id)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = defaultdict(list)
    for i in best:
        members[find(i)].append(i)
    near = [
        DuplicateGroup("near", sorted(group), {i: round(best[i], 4) for i in group})
        for group in members.values()
        if len(group) > 1
    ]
    groups.sort(key=lambda g: (-len(g.ids), g.ids[0]))
    near.sort(key=lambda g: (-len(g.ids), -max(g.scores.values()), g.ids[0]))
    return groups + near
