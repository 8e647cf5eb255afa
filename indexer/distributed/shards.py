"""The shards a distributed embedding run writes: a manifest plus one ``.npz`` file per group of photos.

A run folder holds ``manifest.json`` (encoder, shard size, photo count, a digest of the photo list),
``photos.txt`` (the list, one path a line, in shard order) and ``shard-000000.npz`` … Each shard holds the raw
image features (float32, before the image space) with the photos' paths and content hashes, and the photos that
could not be read with the reason. Shards are written atomically and only when complete, so a killed run leaves
only whole shards, and the next run with the same photos and encoder embeds only the missing ones (resume).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.atomic import atomic_write_bytes

MANIFEST, PHOTOS = "manifest.json", "photos.txt"
VERSION = 1


class ShardRunMismatchError(ValueError):
    """The shard folder belongs to a run over other photos or another encoder."""


def photos_digest(paths: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(paths).encode("utf-8")).hexdigest()


@dataclass
class Shard:
    """One shard's content: rows for the photos embedded, ``failed`` (path, reason) for the others."""

    paths: list[str]
    sha256: list[str]
    features: np.ndarray
    failed: list[tuple[str, str]]


@dataclass
class ShardPlan:
    """Which photos go in which shard, and what is already written (the manifest)."""

    folder: Path
    encoder: str
    shard_size: int
    photos: list[str]

    @classmethod
    def open(cls, folder: Path, photos: Sequence[str], encoder: str, shard_size: int) -> ShardPlan:
        """The plan in ``folder``: created for a new run, checked against the photos and encoder on resume."""
        folder.mkdir(parents=True, exist_ok=True)
        plan = cls(folder, encoder, shard_size, list(photos))
        manifest = folder / MANIFEST
        if manifest.exists():
            saved = json.loads(manifest.read_text(encoding="utf-8"))
            wanted = {"encoder": encoder, "digest": photos_digest(plan.photos)}
            found = {"encoder": saved.get("encoder"), "digest": saved.get("digest")}
            if found != wanted:
                raise ShardRunMismatchError(
                    f"{folder} holds shards of another run ({saved.get('photos')} photos, encoder "
                    f"{saved.get('encoder')!r}): give another --shards folder or delete it"
                )
            plan.shard_size = int(saved["shard_size"])  # resume cuts the list as the first run did
            return plan
        atomic_write_bytes(folder / PHOTOS, ("\n".join(plan.photos) + "\n").encode("utf-8"))
        info = {
            "version": VERSION,
            "encoder": encoder,
            "shard_size": shard_size,
            "photos": len(plan.photos),
            "shards": plan.count,
            "digest": photos_digest(plan.photos),
        }
        atomic_write_bytes(manifest, json.dumps(info, indent=2).encode("utf-8"))
        return plan

    @property
    def count(self) -> int:
        return -(-len(self.photos) // self.shard_size)

    def paths_of(self, shard: int) -> list[str]:
        return self.photos[shard * self.shard_size : (shard + 1) * self.shard_size]

    def path(self, shard: int) -> Path:
        return self.folder / f"shard-{shard:06d}.npz"

    def missing(self) -> list[int]:
        """Shards not written yet (a resumed run embeds only these)."""
        return [shard for shard in range(self.count) if not self.path(shard).exists()]

    def write(self, shard: int, content: Shard) -> None:
        buffer = io.BytesIO()
        np.savez(
            buffer,
            paths=np.asarray(content.paths, dtype=str),
            sha256=np.asarray(content.sha256, dtype=str),
            features=np.asarray(content.features, dtype=np.float32),
            failed_paths=np.asarray([p for p, _ in content.failed], dtype=str),
            failed_reasons=np.asarray([r for _, r in content.failed], dtype=str),
        )
        atomic_write_bytes(self.path(shard), buffer.getvalue())

    def read(self, shard: int) -> Shard:
        with np.load(self.path(shard)) as data:
            failed = list(zip(data["failed_paths"].tolist(), data["failed_reasons"].tolist(), strict=True))
            return Shard(data["paths"].tolist(), data["sha256"].tolist(), data["features"], failed)
