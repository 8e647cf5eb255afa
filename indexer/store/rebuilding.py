"""Re-deriving every vector of an index (``ImageIndex.rebuild``): in RAM for the small kinds, streamed into a
new generation folder for ``ivf-pq-mmap`` (or a new Milvus generation collection for the ``milvus-*`` kinds) so
that a million photos never sit in memory at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from indexer.store.index_kinds import MILVUS_KINDS, MMAP_KIND
from indexer.store.milvus_vectors import MilvusVectors
from indexer.store.vector_files import AnyVectors, MmapBuilder
from indexer.store.vectors import VectorIndex

if TYPE_CHECKING:
    from indexer.store.core import IndexCore

CHUNK = 50_000  # features read and transformed per step: 256 MB of 1280-d float32


def rebuild_vectors(
    core: IndexCore, keys: Sequence[tuple[int, str, str]], kind: str, progress: bool
) -> tuple[AnyVectors | None, list[tuple[str, str]]]:
    """Vectors of kind ``kind`` for the ``(id, sha256, path)`` rows, and the ``(path, reason)`` of rows whose
    image could not be read. Nothing the index uses now is touched: the caller swaps the result in."""
    if kind in MILVUS_KINDS:
        return _rebuild_milvus(core, keys, progress)
    if kind != MMAP_KIND:
        features, failed = core._features_for(keys, progress=progress)
        ids = np.array(sorted(features), dtype=np.int64)
        if not len(ids):
            return None, failed
        matrix = core._space.apply(np.stack([features[int(i)] for i in ids]))
        return VectorIndex.build(ids, matrix, kind, core.index_settings), failed
    builder: MmapBuilder | None = None
    failed = []
    try:
        for start in range(0, len(keys), CHUNK):
            features, lost = core._features_for(keys[start : start + CHUNK], progress=progress)
            failed += lost
            ids = np.array(sorted(features), dtype=np.int64)
            if not len(ids):
                continue
            matrix = core._space.apply(np.stack([features[int(i)] for i in ids]))
            builder = builder or MmapBuilder(core.folder, matrix.shape[1], core.index_settings)
            builder.append(ids, matrix)
        return (builder.finish() if builder is not None else None), failed
    except BaseException:
        if builder is not None:
            builder.abandon()
        raise


def _rebuild_milvus(
    core: IndexCore, keys: Sequence[tuple[int, str, str]], progress: bool
) -> tuple[AnyVectors | None, list[tuple[str, str]]]:
    """Stream the vectors into a new generation collection; the old one serves until the sidecar switches."""
    fresh = MilvusVectors.new_generation(core.sidecar.dim, core.index_settings)
    failed: list[tuple[str, str]] = []
    try:
        for start in range(0, len(keys), CHUNK):
            features, lost = core._features_for(keys[start : start + CHUNK], progress=progress)
            failed += lost
            ids = np.array(sorted(features), dtype=np.int64)
            if len(ids):
                fresh.add(ids, core._space.apply(np.stack([features[int(i)] for i in ids])))
        return fresh, failed
    except BaseException:
        fresh.drop()
        raise
