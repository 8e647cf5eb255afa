"""Language bridge: fill the part of a hybrid sentence embedding whose encoder never saw the language.

mUSE v3 was not trained on Czech, so in a ``muse+e5-small`` embedding of a Czech caption the mUSE half is
noise, while the e5 half covers Czech. The bridge replaces that half with a linear prediction from the part
that does cover the language: ``mUSE(English caption) ≈ [e5(translation), 1] · W``. It is the TRANSLATOR of
"Grounding multilingual concepts with vision" (a language transformation matrix ``argmin_M ‖M·T − I‖²``
solved in closed form; we add a small ridge term and a bias, and skip their RCSLS refinement), fitted on
parallel captions: the same image's caption and its translation (Multi30K task 1).

The text tower is untouched: it reads a bridged Czech input as it reads an English one. The bridge only
applies to the languages it was fitted on (``languages``), stored next to the tower as ``bridge.json`` (config
and fit report) + ``bridge.safetensors`` (the matrix, bias as the last row).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load, save

from indexer.asset_paths import BRIDGE_CONFIG
from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.unit import unit_rows

CONFIG_NAME = BRIDGE_CONFIG  # what the encoder factory looks for to load a folder's bridge
WEIGHTS_NAME = "bridge.safetensors"


def fit_ridge(inputs: np.ndarray, targets: np.ndarray, ridge: float) -> np.ndarray:
    """``argmin_W ‖[X, 1]·W − Y‖² + ridge·‖W‖²`` in closed form (the normal equations); W is (d_in + 1, d_out)."""
    x = np.hstack([inputs, np.ones((len(inputs), 1), dtype=inputs.dtype)]).astype(np.float64)
    gram = x.T @ x + ridge * np.eye(x.shape[1])
    return np.linalg.solve(gram, x.T @ targets.astype(np.float64)).astype(np.float32)


@dataclass
class LanguageBridge:
    weight: np.ndarray  # (source width + 1, target width)
    source: tuple[int, int]  # columns of the hybrid embedding read (the part that covers the language)
    target: tuple[int, int]  # columns replaced (the part that does not)
    languages: frozenset[str]
    text_encoder: str
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        width_in, width_out = self.source[1] - self.source[0], self.target[1] - self.target[0]
        if self.weight.shape != (width_in + 1, width_out):
            raise ValueError(f"bridge weight is {self.weight.shape}, expected {(width_in + 1, width_out)}")

    def predict_target(self, sources: np.ndarray) -> np.ndarray:
        """Unit target-part vectors predicted from unit source-part vectors."""
        x = np.hstack([unit_rows(sources), np.ones((len(sources), 1), dtype=np.float32)])
        return unit_rows(x @ self.weight)

    def apply(self, sentences: np.ndarray, langs: str | Sequence[str | None] | None) -> np.ndarray:
        """Bridge the rows whose language (one for all, or one per row) the bridge was fitted on."""
        if langs is None or isinstance(langs, str):
            mask = np.full(len(sentences), langs in self.languages)
        else:
            mask = np.fromiter((lang in self.languages for lang in langs), dtype=bool, count=len(sentences))
        if not mask.any():
            return sentences
        out = np.array(sentences, dtype=np.float32, copy=True)
        (s0, s1), (t0, t1) = self.source, self.target
        sources = out[mask, s0:s1]
        # Keep the hybrid's scaling: every part has the same norm (1/√parts), so the source's norm is the target's.
        out[mask, t0:t1] = self.predict_target(sources) * np.linalg.norm(sources, axis=1, keepdims=True)
        return out

    def save_pretrained(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(folder / WEIGHTS_NAME, save({"weight": np.ascontiguousarray(self.weight)}))
        config = {
            "text_encoder": self.text_encoder,
            "source": list(self.source),
            "target": list(self.target),
            "languages": sorted(self.languages),
            "info": self.info,
        }
        atomic_write_json(folder / CONFIG_NAME, config)

    @classmethod
    def from_pretrained(cls, folder: Path) -> LanguageBridge | None:
        """The bridge stored in ``folder``, or None when there is none."""
        config_path = folder / CONFIG_NAME
        if not config_path.exists():
            return None
        config = json.loads(config_path.read_text(encoding="utf-8"))
        weight = load((folder / WEIGHTS_NAME).read_bytes())["weight"]
        return cls(
            weight=weight,
            source=(int(config["source"][0]), int(config["source"][1])),
            target=(int(config["target"][0]), int(config["target"][1])),
            languages=frozenset(config["languages"]),
            text_encoder=str(config["text_encoder"]),
            info=dict(config.get("info", {})),
        )


def remove_bridge(folder: Path) -> None:
    """Delete the bridge stored in ``folder``, if any (its config first: a half-removed bridge is no bridge)."""
    (folder / CONFIG_NAME).unlink(missing_ok=True)
    (folder / WEIGHTS_NAME).unlink(missing_ok=True)


def part_columns(part_dims: Sequence[int], index: int) -> tuple[int, int]:
    """Columns of part ``index`` in a hybrid embedding whose parts have widths ``part_dims``."""
    start = sum(part_dims[:index])
    return start, start + part_dims[index]
