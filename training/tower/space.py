"""The space the tower is trained in, and the :class:`ImageSpace` the index must then apply.

* ``raw`` (the paper): targets are the raw pooled CNN features, tower outputs are used as they are, distances
  are on the CNN's scale. At search time both sides are l2-normalised (cosine), so the shipped space is ``l2``.
* ``l2``: both sides l2-normalised while training.
* ``center-l2``: image features minus a fixed mean (the encoder's mean feature on the TRAIN split), then
  l2-normalised; tower outputs l2-normalised. The mean is stored in the tower config so the index applies the
  identical transform; ``image_space_from`` reuses an existing tower's mean so existing indexes stay valid.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from indexer.image_space import ImageSpace
from indexer.tower import CONFIG_NAME

SPACES: tuple[str, ...] = ("raw", "l2", "center-l2")


def fit_image_space(kind: str, train_features: np.ndarray, image_space_from: Path | None = None) -> ImageSpace:
    if kind not in SPACES:
        raise ValueError(f"unknown training space {kind!r}; choose one of: {', '.join(SPACES)}")
    if image_space_from is not None:
        space = image_space_from_tower(image_space_from)
        shipped = "l2" if kind == "raw" else kind
        if space.kind != shipped:
            raise ValueError(f"--image-space-from {image_space_from} has space {space.kind!r}, not {shipped!r}")
        if space.mean is not None and space.mean.shape[0] != train_features.shape[1]:
            raise ValueError(
                f"the mean in {image_space_from} has {space.mean.shape[0]} dims, features have {train_features.shape[1]}"
            )
        return space
    if kind == "center-l2":
        return ImageSpace("center-l2", train_features.mean(axis=0).astype(np.float32))
    return ImageSpace("l2")


def image_space_from_tower(folder: Path) -> ImageSpace:
    path = Path(folder) / CONFIG_NAME
    if not path.exists():
        raise FileNotFoundError(f"no tower config at {path}")
    return ImageSpace.from_config(json.loads(path.read_text(encoding="utf-8")).get("image_space"))


def image_targets(kind: str, space: ImageSpace, features: np.ndarray) -> np.ndarray:
    """What the loss compares tower outputs with."""
    return np.ascontiguousarray(features, dtype=np.float32) if kind == "raw" else space.apply(features)


def tower_outputs(kind: str, outputs: torch.Tensor) -> torch.Tensor:
    return outputs if kind == "raw" else F.normalize(outputs, dim=-1)
