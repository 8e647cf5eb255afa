"""Embedding photos on a Ray cluster (``polyglot index add --engine ray``): Ray Data does the sharding and the
scheduling, we only say what one worker does with a batch.

``map_batches`` runs :class:`Embedder` as a pool of ``workers`` actors (CPU or GPU): each builds nothing but
loads the image encoder it was sent once, then reads, hashes, decodes and encodes batches of photos with the same
functions as the single-machine indexer (``content_hash``, ``decode_image``, ``encoder.prepare``,
``predict_prepared``), so the same photos give the same features. The driver gathers rows per shard and writes a
shard when it is complete (indexer/distributed/shards.py): a killed run keeps its whole shards, and a new run
embeds only the rest. The photos must be readable at the same paths on every node (shared storage).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from indexer.distributed.shards import Shard, ShardPlan
from indexer.encoders.base import ImageEncoder
from indexer.images import ImageDecodeError, content_hash, decode_image


@dataclass
class RayRun:
    """What a run did: shards embedded now, shards found from an earlier run, photos embedded now, and the
    seconds from submitting the dataset to the last shard written (actor start-up and encoder loads included)."""

    embedded_shards: int = 0
    resumed_shards: int = 0
    photos: int = 0
    seconds: float = 0.0


class Embedder:
    """A Ray Data actor: the encoder is loaded once per actor, then each call embeds one batch of photo paths."""

    def __init__(self, encoder: ImageEncoder, max_pixels: int, min_side: int | None = None) -> None:
        self.encoder = encoder
        self.max_pixels = max_pixels
        self.min_side = min_side  # the reduced decode of `index add` (IndexSettings.decode_side): the same features
        self.encoder.load()

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        paths = [str(p) for p in batch["path"]]
        hashes, errors = [""] * len(paths), [""] * len(paths)
        prepared, rows = [], []
        for row, path in enumerate(paths):
            try:
                data = Path(path).read_bytes()
                hashes[row] = content_hash(data)
                image = decode_image(data, max_pixels=self.max_pixels, min_side=self.min_side)
                prepared.append(self.encoder.prepare(image))
                rows.append(row)
            except OSError as exc:
                errors[row] = f"cannot read: {exc.strerror or exc}"
            except ImageDecodeError as exc:
                errors[row] = str(exc)
        computed = self.encoder.predict_prepared(prepared)
        features = np.zeros((len(paths), computed.shape[1] if len(rows) else self.encoder.dim), dtype=np.float32)
        features[rows] = computed
        return {
            "path": np.asarray(paths, dtype=object),
            "shard": np.asarray(batch["shard"], dtype=np.int64),
            "sha256": np.asarray(hashes, dtype=object),
            "error": np.asarray(errors, dtype=object),
            "features": features,
        }


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Connect to the cluster at ``address`` (``auto``: the one this node belongs to), or start a local one;
    a session the caller already opened is used as it is and left open."""
    import ray

    if ray.is_initialized():
        yield
        return
    ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def embed_missing(
    plan: ShardPlan,
    encoder: ImageEncoder,
    *,
    max_pixels: int,
    min_side: int | None = None,
    batch_size: int,
    workers: int,
    gpus_per_worker: float = 0.0,
    address: str | None = None,
    progress: bool = True,
) -> RayRun:
    """Embed the photos of the shards not written yet, writing each shard as soon as all its rows are back.
    ``min_side``: decode each photo down to this short side, as ``index add`` does (``IndexSettings.decode_side``)."""
    missing = plan.missing()
    run = RayRun(resumed_shards=plan.count - len(missing))
    if not missing:
        return run
    expected = {shard: plan.paths_of(shard) for shard in missing}
    bar = tqdm(total=sum(map(len, expected.values())), unit="img", desc="embedding (ray)", disable=not progress)
    started = time.perf_counter()
    with ray_session(address):
        import ray.data

        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # ours counts photos; Ray's count blocks
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # quiet: no per-dataset INFO lines
        items = [{"path": path, "shard": shard} for shard, paths in expected.items() for path in paths]
        resources: dict[str, Any] = {"num_gpus": gpus_per_worker} if gpus_per_worker else {"num_cpus": 1}
        embedded = ray.data.from_items(items).map_batches(
            Embedder,
            fn_constructor_args=(encoder, max_pixels, min_side),
            batch_size=batch_size,
            batch_format="numpy",
            concurrency=workers,
            **resources,
        )
        pending: dict[int, list[dict[str, Any]]] = defaultdict(list)
        for batch in embedded.iter_batches(batch_size=None, batch_format="numpy"):
            for row in range(len(batch["path"])):
                shard = int(batch["shard"][row])
                pending[shard].append({key: batch[key][row] for key in ("path", "sha256", "error", "features")})
                if len(pending[shard]) == len(expected[shard]):
                    plan.write(shard, _shard_of(pending.pop(shard), expected[shard]))
                    run.embedded_shards += 1
            bar.update(len(batch["path"]))
            run.photos += len(batch["path"])
    bar.close()
    run.seconds = time.perf_counter() - started
    return run


def _shard_of(rows: list[dict[str, Any]], order: list[str]) -> Shard:
    """A shard's rows in the plan's order, the photos that failed apart."""
    by_path = {str(row["path"]): row for row in rows}
    good = [by_path[p] for p in order if not by_path[p]["error"]]
    failed = [(p, str(by_path[p]["error"])) for p in order if by_path[p]["error"]]
    dim = len(rows[0]["features"])
    features = np.stack([row["features"] for row in good]) if good else np.zeros((0, dim), dtype=np.float32)
    return Shard([str(r["path"]) for r in good], [str(r["sha256"]) for r in good], features, failed)
