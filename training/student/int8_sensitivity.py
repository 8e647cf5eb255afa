"""Which of the student's Linears its int8 graph keeps in fp32: each Linear rounded alone, on training texts.

ONNX Runtime's dynamic quantisation (:func:`indexer.export.e5.quantize_int8`) rounds a MatMul's input to uint8
with one scale and zero point per call (a query is one call: its own tokens), and its weight to int8 with one
scale per output channel, symmetric in ±127. :func:`fake_dynamic_int8` computes exactly that in PyTorch, so each
smoothed Linear (:mod:`indexer.export.e5_int8`) can be rounded alone and what it does to the pooled vector measured:
``1 − cosine`` to fp32, averaged over texts. Errors of different Linears roughly add, so the ones whose error per
multiply-accumulate is largest go fp32 first, until ``FP32_SHARE`` of the trunk's multiplies run in fp32
(:func:`fp32_choice`). In the ONNX graph a kept Linear is one MatMul left out of the quantisation (its time, not
the whole graph's, goes back to fp32).

Why: smoothing alone left three students in a row 0.001-0.002 R@10 outside the 0.01 rule in one dev language
(docs/model-card.md). The texts are the calibration's (training texts only); the share was chosen on other
held-apart training texts (``benchmarks/student_int8.py --fp32-shares``), never on a dev set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn
from tqdm.auto import tqdm

from indexer.export.e5 import E5Encoder, attention_bias
from indexer.export.e5_int8 import SMOOTHED, SMOOTHING_ALPHA, SmoothedLinear, smoothed, weight_levels

# 5 % of the multiplies in fp32 (w12r10: layer 0's ffn_out and three value projections). Chosen on held-apart
# training texts by the highest mean cosine to fp32 within 1.10x the all-int8 time: 0.99944 against 0.99936 at
# 1.07x the time; 10 % was 1.15x (benchmarks/student_int8-fp32-share.md).
FP32_SHARE = 0.05


def uint8_levels(
    x: torch.Tensor, low: torch.Tensor, high: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``x`` on ONNX Runtime's ``DynamicQuantizeLinear`` grid over the range ``low``–``high`` (widened to hold 0):
    its uint8 levels, the zero point and the scale, so that ``(levels − zero) · scale`` is the rounded ``x``."""
    low, high = low.clamp(max=0.0), high.clamp(min=0.0)
    scale = ((high - low) / 255.0).clamp(min=1e-12)
    zero = torch.round(-low / scale).clamp(0, 255)
    return torch.clamp(torch.round(x / scale) + zero, 0, 255), zero, scale


def fake_dynamic_int8(
    x: torch.Tensor, mask: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, saturating: bool = False
) -> torch.Tensor:
    """``x @ weightᵀ + bias`` as ONNX Runtime's dynamic int8 MatMul computes it, for a batch of texts (B, T, C)
    whose ``mask`` (B, T) marks each text's tokens: each text's input on its own uint8 grid (``DynamicQuantizeLinear``:
    scale ``(max(x, 0) − min(x, 0)) / 255``, zero point ``round(−min / scale)``, over its tokens only, as when it is
    encoded alone), each output channel's weights on a symmetric int8 grid (scale ``max |w| / 127``).
    ``saturating``: as on an x86 CPU without VNNI (:func:`indexer.export.e5.int8_pairs_saturate`), the products of
    input channels 2k and 2k+1 (uint8 level × int8 level) are added in 16 bits and clipped to ±32,767 first."""
    tokens = mask[:, :, None].bool()
    low = torch.where(tokens, x, torch.full_like(x, torch.inf)).amin(dim=(1, 2), keepdim=True)
    high = torch.where(tokens, x, torch.full_like(x, -torch.inf)).amax(dim=(1, 2), keepdim=True)
    levels, zero, scale = uint8_levels(x, low, high)
    int8_weights, weight_scale = weight_levels(weight)
    if not saturating:
        return ((levels - zero) * scale) @ (int8_weights * weight_scale).T + bias
    if x.shape[-1] % 2:  # a zero channel completes the last pair
        levels, int8_weights = nn.functional.pad(levels, (0, 1)), nn.functional.pad(int8_weights, (0, 1))
    batch, length, channels = levels.shape
    pairs = torch.einsum(
        "btpk,opk->btop", levels.reshape(batch, length, channels // 2, 2), int8_weights.reshape(-1, channels // 2, 2)
    )
    products = pairs.clamp(-32768, 32767).sum(dim=-1) - zero * int8_weights.sum(dim=1)
    return products * scale * weight_scale[:, 0] + bias


class _RoundedLinear(nn.Module):
    """A smoothed Linear computed as the int8 graph computes it, over one batch's texts (``mask``)."""

    def __init__(
        self, smoothed_linear: SmoothedLinear, mask: torch.Tensor, weight: torch.Tensor, saturating: bool
    ) -> None:
        super().__init__()
        self.smoothed_linear = smoothed_linear
        self.mask = mask
        self.weight = weight  # the smoothed weight, or where GPTQ's corrections put it (on its int8 levels)
        self.saturating = saturating

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = self.smoothed_linear.linear
        smoothed_x = x * self.smoothed_linear.inverse
        return fake_dynamic_int8(smoothed_x, self.mask, self.weight, inner.bias, self.saturating)


def linear_macs(trunk: E5Encoder) -> dict[str, int]:
    """Multiply-accumulates per token of each Linear (``layers.N.query`` …): in × out."""
    return {
        f"layers.{number}.{name}": getattr(layer, name).in_features * getattr(layer, name).out_features
        for number, layer in enumerate(trunk.layers)
        for name in SMOOTHED
    }


def linear_sensitivity(
    trunk: E5Encoder,
    absmax: Mapping[str, torch.Tensor],
    batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
    alpha: float = SMOOTHING_ALPHA,
    rounding: Mapping[str, torch.Tensor] | None = None,
    saturating: bool = False,
) -> dict[str, float]:
    """For each Linear, the mean ``1 − cosine`` between the smoothed trunk's pooled vectors with only that Linear
    rounded to int8 (its levels corrected by ``rounding`` where given) and the fp32 ones, over ``batches`` of
    (embeddings (B, T, H), mask (B, T)). The layers below a Linear do not change, so each batch's hidden states are
    computed once per layer and reused. ``saturating``: as the int8 kernel of a CPU without VNNI computes it (the
    calibration measures the exact kernel's error, the same on every machine; tests compare with this machine's)."""
    model = smoothed(trunk, dict(absmax), alpha)
    int8_model = smoothed(trunk, dict(absmax), alpha, dict(rounding)) if rounding else model
    errors: dict[str, float] = {name: 0.0 for name in linear_macs(trunk)}
    count = 0
    with torch.no_grad():
        for embeddings, mask in tqdm(batches, desc="int8 sensitivity", unit="batch", leave=False):
            states = [model.lower(embeddings, mask, 0)]
            bias = attention_bias(mask)
            for layer in model.layers:
                states.append(layer(states[-1], bias))
            pooled = model.upper(states[-1], mask, len(model.layers))
            reference = nn.functional.normalize(pooled, dim=-1)
            for number, layer in enumerate(model.layers):
                for name in SMOOTHED:
                    original = getattr(layer, name)
                    int8_weight = getattr(int8_model.layers[number], name).linear.weight
                    setattr(layer, name, _RoundedLinear(original, mask, int8_weight, saturating))
                    try:
                        moved = nn.functional.normalize(model.upper(states[number], mask, number), dim=-1)
                    finally:
                        setattr(layer, name, original)
                    errors[f"layers.{number}.{name}"] += float((1.0 - (moved * reference).sum(dim=-1)).sum())
            count += int(mask.shape[0])
    return {name: error / max(count, 1) for name, error in errors.items()}


def fp32_choice(sensitivity: Mapping[str, float], macs: Mapping[str, int], share: float) -> dict[str, float]:
    """The Linears to keep in fp32: by error per multiply, largest first, while their multiplies stay within
    ``share`` of all; a Linear that does not fit is passed over for smaller ones after it. Returns name → error."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be within [0, 1], not {share}")
    budget = share * sum(macs.values())
    chosen: dict[str, float] = {}
    spent = 0
    for name in sorted(sensitivity, key=lambda key: (-sensitivity[key] / macs[key], key)):
        if sensitivity[name] > 0.0 and spent + macs[name] <= budget:
            chosen[name] = sensitivity[name]
            spent += macs[name]
    return chosen
