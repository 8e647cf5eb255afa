"""The checks made when an image index folder is opened: is there an index, was it built with the configured
image encoder, and are its vectors in the image space the text tower expects? Each refusal says what to do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from indexer.encoders.base import ImageEncoder
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store.sidecar import DB_NAME, Sidecar
from indexer.store.vectors import FAISS_NAME


class IndexMismatchError(ValueError):
    """The index on disk was built with another image encoder or image space than the one asked for."""


class IndexNotFoundError(FileNotFoundError):
    """No index in the folder and ``create=False``."""


def default_image_space(settings: Settings) -> ImageSpace:
    """The image space the text tower was trained for (its config.json), else plain ``l2``."""
    from indexer.asset_paths import shipped_tower_path

    config_path = (settings.models.tower_path or shipped_tower_path(settings.models.text_encoder)) / "config.json"
    if config_path.exists():
        config = json.loads(config_path.read_text(encoding="utf-8"))
        return ImageSpace.from_config(config.get("image_space"))
    return ImageSpace("l2")


def space_config(space: ImageSpace) -> dict[str, Any]:
    """How the sidecar records an image space: its config plus its fingerprint."""
    return {**space.to_config(), "fingerprint": space.fingerprint}


def read_sidecar(folder: Path, *, create: bool) -> Sidecar | None:
    """The folder's sidecar; ``None`` for a new index, which only ``create`` allows."""
    sidecar = Sidecar.load(folder)
    if sidecar is None and not create:
        raise IndexNotFoundError(f"no index in {folder} (run `polyglot index add PATH...` first)")
    return sidecar


def check_encoder(folder: Path, sidecar: Sidecar | None, encoder: ImageEncoder) -> None:
    if sidecar is not None and sidecar.image_encoder != encoder.name:
        raise IndexMismatchError(
            f"the index in {folder} was built with image encoder {sidecar.image_encoder!r}, but "
            f"{encoder.name!r} is configured: set POLYGLOT_IMAGE_ENCODER={sidecar.image_encoder} to use it, "
            "or point POLYGLOT_INDEX_DIR at another folder to build a new index"
        )


def is_stale(folder: Path, sidecar: Sidecar | None, space: ImageSpace, *, rebuild_if_stale: bool) -> bool:
    """Whether the stored vectors are in another image space; refused unless the caller will rebuild them."""
    stale = sidecar is not None and sidecar.image_space_fingerprint != space.fingerprint
    if stale and not rebuild_if_stale:
        assert sidecar is not None
        raise IndexMismatchError(
            f"the index in {folder} stores vectors in image space {sidecar.image_space_fingerprint!r}, but the "
            f"text tower expects {space.fingerprint!r}: run `polyglot index rebuild`"
        )
    return stale


def create_sidecar(folder: Path, encoder: ImageEncoder, space: ImageSpace) -> Sidecar:
    """The sidecar of a new, empty index, saved in ``folder``."""
    sidecar = Sidecar(
        image_encoder=encoder.name,
        dim=encoder.dim or None,
        index_type="flat",
        image_space=space_config(space),
        files={"vectors": FAISS_NAME, "metadata": DB_NAME},
    )
    sidecar.save(folder)
    return sidecar
