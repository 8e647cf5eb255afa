"""The text tower's head, declared once as a sequence of layers, and its inference in numpy.

:class:`indexer.tower.TextTower` builds its torch layers from :func:`head_layers` (so the names of its saved
weights, ``mlp.<position>.weight``, follow from it), and both it and the torch-free text side of
``polyglot search`` (:mod:`indexer.query.onnx_text_side`) run the head through :func:`run_head`: the same layers,
the same arithmetic, whether the weights are a live torch module's or read from ``model.safetensors`` with numpy.
Both name the text side by :func:`head_fingerprint`, so vectors one cached under it serve the other.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np

LayerKind = Literal["linear", "dropout", "relu", "l2"]


def head_layers(blocks: int, final_relu: bool) -> list[LayerKind]:
    """The layers of a head of ``blocks`` blocks: linear → dropout → ReLU → l2-norm each; the last block has no
    l2-norm, and its ReLU only with ``final_relu`` (Aggarwal et al. §3.1)."""
    kinds: list[LayerKind] = []
    for index in range(blocks):
        last = index == blocks - 1
        kinds += ["linear", "dropout"]
        if not last or final_relu:
            kinds.append("relu")
        if not last:
            kinds.append("l2")
    return kinds


def linear_weights(kinds: Sequence[LayerKind], state: Mapping[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(weight, bias)`` of each linear layer from a saved state (``mlp.<position>.weight`` / ``.bias``)."""
    return [
        (np.asarray(state[f"mlp.{position}.weight"]), np.asarray(state[f"mlp.{position}.bias"]))
        for position, kind in enumerate(kinds)
        if kind == "linear"
    ]


def run_head(
    kinds: Sequence[LayerKind], linears: Sequence[tuple[np.ndarray, np.ndarray]], sentences: np.ndarray
) -> np.ndarray:
    """Sentence embeddings (n, input_dim) → unit vectors (n, output_dim), float32, in eval mode (dropout is the
    identity at inference)."""
    x = np.ascontiguousarray(sentences, dtype=np.float32)
    weights = iter(linears)
    for kind in kinds:
        if kind == "linear":
            weight, bias = next(weights)
            x = x @ weight.T + bias
        elif kind == "relu":
            x = np.maximum(x, 0.0)
        elif kind == "l2":
            x = _unit(x)
    return _unit(x).astype(np.float32, copy=False)


def _unit(rows: np.ndarray) -> np.ndarray:
    # indexer.unit.unit_rows, written out here: every query runs through the head, and the walk of a query
    # (benchmarks/query_walk.py) stays shorter by a module.
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def head_fingerprint(
    text_encoder: str,
    tensors: Iterable[tuple[str, np.ndarray]],
    bridge: np.ndarray | None = None,
    encoder_weights: str | None = None,
) -> str:
    """Identity of a text side (:func:`indexer.tower.tower_fingerprint` explains what goes in): the encoder's name,
    the head's tensors by name, the language bridge's weight and the encoder's own weights' digest, if any."""
    digest = hashlib.sha256(text_encoder.encode())
    for name, array in sorted(tensors, key=lambda item: item[0]):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    if bridge is not None:
        digest.update(bridge.tobytes())
    if encoder_weights is not None:
        digest.update(b"encoder-weights:" + encoder_weights.encode())
    return digest.hexdigest()[:16]
