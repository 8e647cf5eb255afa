"""``polyglot index add --engine ray``: embed on a Ray cluster, then index through the normal add path.

1. Photos already indexed at the same path are left to the normal path (it skips them when unchanged).
2. The rest are embedded by Ray actors into shards (indexer/distributed/ray_embed.py), resumable.
3. The shards' features go into the features cache, keyed by content hash like every feature the indexer
   computes, and ``ImageIndex.add_paths`` does the rest as for a single machine: SQL rows with the same metadata
   (manifests included), vectors in the configured backend (FAISS or Milvus), the kind rule, checkpoints. It
   finds every feature in the cache, so nothing is encoded twice.
4. The shard folder is deleted once the photos are indexed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from indexer.distributed.ray_embed import RayRun, embed_missing
from indexer.distributed.shards import ShardPlan, photos_digest
from indexer.feature_cache import FeatureCache
from indexer.image_index import AddReport, ImageIndex
from indexer.image_sources import Sources

SHARDS_DIR = "ray-shards"
SHARD_SIZE = 1_024  # photos per shard: 5 MB of 1280-d features, the most a killed run re-embeds


def add_with_ray(
    index: ImageIndex,
    sources: Sources,
    *,
    workers: int = 1,
    address: str | None = None,
    gpus_per_worker: float = 0.0,
    shards_dir: Path | None = None,
    shard_size: int = SHARD_SIZE,
    progress: bool = True,
) -> tuple[AddReport, RayRun]:
    indexed = index.store.by_paths([str(p) for p in sources.paths])
    todo = [str(p) for p in sources.paths if str(p) not in indexed]
    run = RayRun()
    folder = shards_dir or index.folder / SHARDS_DIR / photos_digest(todo)[:16]
    if todo:
        plan = ShardPlan.open(folder, todo, index.encoder.name, shard_size)
        run = embed_missing(
            plan,
            index.encoder,
            max_pixels=index.settings.index.max_image_pixels,
            min_side=index.settings.index.decode_side(index.encoder.decode_side),  # as `index add` decodes
            batch_size=index.settings.index.batch_size,
            workers=workers,
            gpus_per_worker=gpus_per_worker,
            address=address,
            progress=progress,
        )
        fill_cache(plan, index)
    report = index.add_paths(sources.paths, sources.metadata, progress=progress)
    if todo:
        shutil.rmtree(folder, ignore_errors=True)
    return report, run


def fill_cache(plan: ShardPlan, index: ImageIndex) -> None:
    """Every shard's features into the index's features cache (SQLite: safe beside the index's own handle)."""
    cache: FeatureCache | None = None
    try:
        for shard in range(plan.count):
            content = plan.read(shard)
            if not len(content.paths):
                continue
            if cache is None:
                dim = content.features.shape[1]
                cache = FeatureCache(index.settings.resolved_cache_dir, index.encoder.cache_name, dim)
            cache.put_many(dict(zip(content.sha256, content.features, strict=True)))
    finally:
        if cache is not None:
            cache.close()
