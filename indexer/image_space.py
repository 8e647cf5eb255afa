"""How raw pooled CNN features become the unit vectors stored in the index (and targeted by the tower).

* ``l2``: ``x / ||x||``.
* ``center-l2``: ``(x - mean) / ||x - mean||`` with a fixed mean of the encoder's features on a reference
  collection. Pooled ReLU features all share a large positive mean direction; removing it spreads the
  images over the sphere, which makes cosine similarities discriminative.

The index records the space it applied (with a fingerprint of the mean); a tower trained for another space
is refused with a clear error instead of silently returning nonsense.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indexer.unit import unit_rows


@dataclass(frozen=True)
class ImageSpace:
    kind: str = "l2"
    mean: np.ndarray | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in ("l2", "center-l2"):
            raise ValueError(f"unknown image space {self.kind!r}: expected 'l2' or 'center-l2'")
        if self.kind == "center-l2" and self.mean is None:
            raise ValueError("image space 'center-l2' needs a mean vector")

    @property
    def fingerprint(self) -> str:
        if self.mean is None:
            return self.kind
        digest = hashlib.sha256(np.ascontiguousarray(self.mean, dtype=np.float32).tobytes()).hexdigest()[:16]
        return f"{self.kind}:{digest}"

    def apply(self, features: np.ndarray) -> np.ndarray:
        x = np.atleast_2d(np.asarray(features, dtype=np.float32))
        if self.mean is not None:
            x = x - self.mean[None, :]
        return np.ascontiguousarray(unit_rows(x), dtype=np.float32)

    def to_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"kind": self.kind}
        if self.mean is not None:
            raw = np.ascontiguousarray(self.mean, dtype="<f4").tobytes()
            config["mean_f32_base64"] = base64.b64encode(raw).decode("ascii")
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> ImageSpace:
        config = config or {"kind": "l2"}
        mean = None
        if "mean_f32_base64" in config:
            mean = np.frombuffer(base64.b64decode(config["mean_f32_base64"]), dtype="<f4").astype(np.float32)
        return cls(kind=str(config.get("kind", "l2")), mean=mean)
