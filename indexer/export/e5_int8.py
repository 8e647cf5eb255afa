"""The student's int8 graph: SmoothQuant (Xiao et al. 2023), then ONNX Runtime's dynamic int8 quantisation.

Why: on a CPU with VNNI the int8 MatMuls run e5's 12 layers ~2.5x faster than fp32, but the plain dynamic
quantisation (:func:`indexer.export.e5.quantize_int8`) quantises each MatMul's input with one scale for the whole
tensor, and a few of e5's channels are 10-40x larger than the rest (the feed-forward layers' inputs: max 33 against
a median of 1.8 in layer 1). Those channels set the scale, the others are rounded to a handful of levels, and the
vectors move (cosine to fp32 down to 0.985; recall fell by more than 0.01 in 9 of 13 wide dev languages).

How: each Linear's input channel ``j`` is divided by ``s_j = max|x_j|^α / max|W_j|^(1-α)`` and the weight's row
``j`` multiplied by it, which leaves the fp32 product unchanged and moves the outliers from the activation (one
scale per tensor) into the weights (one scale per output channel, where they cost little). e5 is post-LN, so the
division cannot be folded into the LayerNorm before it (its output is also the residual): it stays an elementwise
Mul in front of the MatMul (~0.1 ms for 12 layers). ``max|x_j|`` is measured once per student on training texts
(:func:`input_absmax`, run by ``polyglot train student`` and ``polyglot models calibrate-student``) and shipped in
the student's delta file, so every machine builds the same graph without any data.

α 0.8 was chosen on training texts (captions and dictionary words in 24 languages, held apart from the
calibration texts): mean cosine to fp32 0.9994 (plain int8: 0.9964), minimum 0.997 (0.985); α 0.5 did not help.

A few Linears may stay fp32 (``keep_fp32``): those whose int8 moves the student's vectors most per multiply they
cost, measured on training texts (:mod:`training.student.int8_sensitivity`) and kept in the delta file with the
ranges. Smoothing alone left a dev language 0.001-0.002 outside the 0.01 rule in three runs in a row. Keeping 5 % of
the multiplies in fp32 cuts the error on training texts by 12 % for 7 % more time, but it did not keep w12r10
within the rule (wide Turkish −0.0154; docs/model-card.md).

The int8 weights may be rounded by GPTQ instead of to the nearest level (``rounding``): per Linear, a small integer
correction of each weight's level, chosen at calibration on training texts (:mod:`training.student.int8_rounding`)
and kept in the delta file. :func:`on_grid` applies it, so that ONNX Runtime's own quantisation of the weight it is
given lands on exactly those levels; the graph, and its speed, stay as they are.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import torch
from torch import nn

from indexer.export.e5 import E5Encoder, export_encoder, quantize_int8

SMOOTHING_ALPHA = 0.8
SMOOTHED = ("query", "key", "value", "attention_out", "ffn_in", "ffn_out")  # every Linear of a layer
INT8_LEVELS = 127  # symmetric int8 weights: ONNX Runtime's scale of an output channel is max |w| / 127


class SmoothedLinear(nn.Module):
    """``linear(x)`` computed as ``(x * inverse) @ (W * scale)ᵀ + b``: the same in fp32, easier in int8."""

    def __init__(self, linear: nn.Linear, scale: torch.Tensor) -> None:
        super().__init__()
        self.inverse = nn.Parameter((1.0 / scale).float(), requires_grad=False)
        self.linear = nn.Linear(linear.in_features, linear.out_features)
        with torch.no_grad():
            self.linear.weight.copy_(linear.weight * scale[None, :])
            self.linear.bias.copy_(linear.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x * self.inverse)


def linear_names(trunk: E5Encoder) -> list[str]:
    """``layers.N.query`` … ``layers.N.ffn_out`` for every layer: the keys of :func:`input_absmax`."""
    return [f"layers.{number}.{name}" for number in range(len(trunk.layers)) for name in SMOOTHED]


def each_linear_input(
    trunk: E5Encoder,
    inputs: Iterable[tuple[torch.Tensor, torch.Tensor]],
    visit: Callable[[str, torch.Tensor], None],
) -> None:
    """Run ``trunk`` over ``inputs`` ((embeddings (B, T, H), mask (B, T)) pairs) and call ``visit(name, tokens)`` with
    every Linear's input (``layers.N.query`` …) over the texts' tokens, (N, in): padding never enters."""
    current: dict[str, torch.Tensor] = {}

    def watch(name: str) -> Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Tensor], None]:
        def hook(_module: nn.Module, args: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
            visit(name, args[0].detach()[current["mask"].bool()])

        return hook

    wanted = set(linear_names(trunk))
    handles = [module.register_forward_hook(watch(name)) for name, module in trunk.named_modules() if name in wanted]
    try:
        with torch.no_grad():
            for embeddings, mask in inputs:
                current["mask"] = mask
                trunk(embeddings, mask)
    finally:
        for handle in handles:
            handle.remove()


def input_absmax(trunk: E5Encoder, texts: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Per input channel, the largest ``|x|`` every Linear of ``trunk`` sees over ``texts`` ((embeddings, mask)
    pairs; no padding enters the maximum)."""
    found: dict[str, torch.Tensor] = {}

    def keep_largest(name: str, tokens: torch.Tensor) -> None:
        largest = tokens.abs().amax(dim=0).float()
        found[name] = torch.maximum(found[name], largest) if name in found else largest

    each_linear_input(trunk, texts, keep_largest)
    if set(found) != set(linear_names(trunk)):
        raise ValueError("no calibration text reached the trunk's layers")
    return found


def smoothing_scale(absmax: torch.Tensor, weight: torch.Tensor, alpha: float = SMOOTHING_ALPHA) -> torch.Tensor:
    """SmoothQuant's ``s_j = max|x_j|^α / max_i |W_ij|^(1-α)`` (``weight``: (out, in) as nn.Linear keeps it)."""
    activation = absmax.float().clamp(min=1e-5)
    weights = weight.detach().abs().amax(dim=0).float().clamp(min=1e-5)
    return (activation**alpha / weights ** (1.0 - alpha)).clamp(min=1e-5)


def weight_levels(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A weight (out, in) as ONNX Runtime's per-channel int8 rounds it: (levels in ±127 as floats, scale (out, 1))."""
    scale = (weight.detach().abs().amax(dim=1, keepdim=True) / INT8_LEVELS).clamp(min=1e-12)
    return torch.clamp(torch.round(weight.detach() / scale), -INT8_LEVELS, INT8_LEVELS), scale


def on_grid(weight: torch.Tensor, correction: torch.Tensor) -> torch.Tensor:
    """``weight`` moved onto its int8 levels, each level shifted by ``correction`` (int8, same shape): the weight
    ONNX Runtime's quantisation then rounds to exactly those levels. Each row's largest weight stays at ±127 levels,
    so that the scale ONNX Runtime derives from the row (its largest |w| / 127) is the one the levels are on."""
    levels, scale = weight_levels(weight)
    levels = torch.clamp(levels + correction.float(), -INT8_LEVELS, INT8_LEVELS)
    anchor = weight.detach().abs().argmax(dim=1, keepdim=True)
    levels.scatter_(1, anchor, torch.sign(weight.detach().gather(1, anchor)) * INT8_LEVELS)
    return levels * scale


def smoothed(
    trunk: E5Encoder,
    absmax: dict[str, torch.Tensor],
    alpha: float = SMOOTHING_ALPHA,
    rounding: dict[str, torch.Tensor] | None = None,
) -> E5Encoder:
    """A copy of ``trunk`` whose Linears are :class:`SmoothedLinear` (the same function in fp32); the Linears named
    in ``rounding`` hold their weights on the int8 levels it corrects (:func:`on_grid`: the int8 graph's model, not
    the fp32 one)."""
    missing = sorted(set(linear_names(trunk)) - set(absmax))
    if missing:
        raise ValueError(f"no input ranges for {', '.join(missing[:3])}")
    copied = copy.deepcopy(trunk)
    for number, layer in enumerate(copied.layers):
        for name in SMOOTHED:
            linear = getattr(layer, name)
            scale = smoothing_scale(absmax[f"layers.{number}.{name}"], linear.weight, alpha)
            smoothed_linear = SmoothedLinear(linear, scale)
            correction = (rounding or {}).get(f"layers.{number}.{name}")
            if correction is not None:
                with torch.no_grad():
                    smoothed_linear.linear.weight.copy_(on_grid(smoothed_linear.linear.weight, correction))
            setattr(layer, name, smoothed_linear)
    return copied.eval()


def matmul_node(linear: str) -> str:
    """The ONNX node of a smoothed Linear's MatMul (``layers.3.ffn_in`` → ``/layers.3/ffn_in/linear/MatMul``): the
    TorchScript exporter names a node by its module's path."""
    layer, name = linear.rsplit(".", 1)
    return f"/{layer}/{name}/linear/MatMul"


def export_smoothed_int8(
    trunk: E5Encoder,
    absmax: dict[str, torch.Tensor],
    int8_path: Path,
    alpha: float = SMOOTHING_ALPHA,
    keep_fp32: Collection[str] = (),
    rounding: dict[str, torch.Tensor] | None = None,
) -> None:
    """The int8 graph of ``trunk``, smoothed with its measured input ranges first; the Linears of ``keep_fp32``
    (:func:`linear_names`) stay fp32, those of ``rounding`` take its corrected int8 levels (:func:`on_grid`)."""
    unknown = sorted((set(keep_fp32) | set(rounding or {})) - set(linear_names(trunk)))
    if unknown:
        raise ValueError(f"the trunk has no Linear {', '.join(unknown[:3])}")
    with tempfile.TemporaryDirectory(prefix="smoothed-") as scratch:
        fp32 = Path(scratch) / "smoothed.onnx"
        corrected = {name: levels for name, levels in (rounding or {}).items() if name not in keep_fp32}
        export_encoder(smoothed(trunk, absmax, alpha, corrected), fp32, None)
        quantize_int8(fp32, int8_path, [matmul_node(name) for name in keep_fp32])
