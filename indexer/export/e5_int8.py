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
within the rule (wide Turkish −0.0154; docs/student.md, "Tenth round").
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


def input_absmax(trunk: E5Encoder, texts: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Per input channel, the largest ``|x|`` every Linear of ``trunk`` sees over ``texts`` ((embeddings, mask)
    pairs, one text each: no padding enters the maximum)."""
    wanted = set(linear_names(trunk))
    found: dict[str, torch.Tensor] = {}

    def watch(name: str) -> Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Tensor], None]:
        def hook(_module: nn.Module, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
            largest = inputs[0].detach().abs().amax(dim=(0, 1)).float()
            found[name] = torch.maximum(found[name], largest) if name in found else largest

        return hook

    handles = [module.register_forward_hook(watch(name)) for name, module in trunk.named_modules() if name in wanted]
    try:
        with torch.no_grad():
            for embeddings, mask in texts:
                trunk(embeddings, mask)
    finally:
        for handle in handles:
            handle.remove()
    if set(found) != wanted:
        raise ValueError("no calibration text reached the trunk's layers")
    return found


def smoothing_scale(absmax: torch.Tensor, weight: torch.Tensor, alpha: float = SMOOTHING_ALPHA) -> torch.Tensor:
    """SmoothQuant's ``s_j = max|x_j|^α / max_i |W_ij|^(1-α)`` (``weight``: (out, in) as nn.Linear keeps it)."""
    activation = absmax.float().clamp(min=1e-5)
    weights = weight.detach().abs().amax(dim=0).float().clamp(min=1e-5)
    return (activation**alpha / weights ** (1.0 - alpha)).clamp(min=1e-5)


def smoothed(trunk: E5Encoder, absmax: dict[str, torch.Tensor], alpha: float = SMOOTHING_ALPHA) -> E5Encoder:
    """A copy of ``trunk`` whose Linears are :class:`SmoothedLinear` (the same function in fp32)."""
    missing = sorted(set(linear_names(trunk)) - set(absmax))
    if missing:
        raise ValueError(f"no input ranges for {', '.join(missing[:3])}")
    copied = copy.deepcopy(trunk)
    for number, layer in enumerate(copied.layers):
        for name in SMOOTHED:
            linear = getattr(layer, name)
            scale = smoothing_scale(absmax[f"layers.{number}.{name}"], linear.weight, alpha)
            setattr(layer, name, SmoothedLinear(linear, scale))
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
) -> None:
    """The int8 graph of ``trunk``, smoothed with its measured input ranges first; the Linears of ``keep_fp32``
    (:func:`linear_names`) stay fp32."""
    unknown = sorted(set(keep_fp32) - set(linear_names(trunk)))
    if unknown:
        raise ValueError(f"the trunk has no Linear {', '.join(unknown[:3])}")
    with tempfile.TemporaryDirectory(prefix="smoothed-") as scratch:
        fp32 = Path(scratch) / "smoothed.onnx"
        export_encoder(smoothed(trunk, absmax, alpha), fp32, None)
        quantize_int8(fp32, int8_path, [matmul_node(name) for name in keep_fp32])
