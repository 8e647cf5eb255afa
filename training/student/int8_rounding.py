"""GPTQ (Frantar et al. 2023, "GPTQ: Accurate Post-Training Quantization for Generative Pre-trained Transformers")
for the student's int8 weights: which level each weight is rounded to, chosen on training texts.

ONNX Runtime rounds each weight to the nearest of its output channel's 255 levels. The error of one weight is then
left where it falls; GPTQ instead rounds the input columns one at a time and moves the weights not yet rounded so
that the Linear's output on the calibration inputs changes as little as possible (least squares, with the inputs'
Gram matrix ``Σ xᵀx``). The result is a small integer correction per weight (mostly 0 or ±1 level), kept in the
delta file and applied by :func:`indexer.export.e5_int8.on_grid` when the int8 graph is built: the same graph, the
same speed, other integers.

Why: on the served student (w12r7), over held-apart training texts, the weights' rounding is the larger part of the
int8 graph's error (mean ``1 − cosine`` to fp32), and GPTQ leaves about a third of it
(``benchmarks/student_int8-error-parts.md``; docs/student.md, "Twelfth session").
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import torch
from tqdm.auto import tqdm

from indexer.export.e5 import E5Encoder
from indexer.export.e5_int8 import (
    INT8_LEVELS,
    SMOOTHING_ALPHA,
    SmoothedLinear,
    each_linear_input,
    linear_names,
    smoothed,
    weight_levels,
)

# GPTQ's damping: this share of the Gram matrix's mean diagonal is added to its diagonal, the paper's default.
GPTQ_DAMPING = 0.01


def input_grams(trunk: E5Encoder, batches: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """``Σ xᵀx`` (float64, in × in) of every Linear's input over the tokens of ``batches`` ((embeddings (B, T, H),
    mask (B, T)); padding left out), as the fp32 trunk computes them."""
    grams: dict[str, torch.Tensor] = {}

    def add(name: str, tokens: torch.Tensor) -> None:
        gram = (tokens.float().T @ tokens.float()).double()
        grams[name] = grams[name] + gram if name in grams else gram

    each_linear_input(trunk, tqdm(batches, desc="int8 rounding: inputs", unit="batch", leave=False), add)
    return grams


def gptq_levels(weight: torch.Tensor, gram: torch.Tensor, damping: float = GPTQ_DAMPING) -> torch.Tensor:
    """The int8 levels (floats in ±127, shape of ``weight`` (out, in)) GPTQ gives ``weight`` on inputs whose Gram
    matrix is ``gram`` (in × in), on each output channel's own scale (its largest |w| / 127, as ONNX Runtime's).

    Column ``j`` is rounded to the nearest level, and its error ``e`` is spread over the columns after it through
    the upper Cholesky factor ``U`` of ``(gram + λI)⁻¹``: ``w[:, k] -= e · U[j, k] / U[j, j]``, the least-squares
    change of the remaining weights that undoes ``e``'s effect on the output (the paper's Algorithm 1)."""
    _nearest, scale = weight_levels(weight)
    remaining = weight.detach().double().clone()
    gram = gram.double().clone()
    dead = torch.diagonal(gram) == 0  # an input that never moved: its weight does not matter
    gram[dead, dead] = 1.0
    remaining[:, dead] = 0.0
    gram += damping * torch.diagonal(gram).mean() * torch.eye(gram.shape[0], dtype=gram.dtype)
    factor = torch.linalg.cholesky(torch.cholesky_inverse(torch.linalg.cholesky(gram)), upper=True)
    scale = scale.double()[:, 0]
    levels = torch.zeros_like(remaining)
    for column in range(remaining.shape[1]):
        levels[:, column] = torch.clamp(torch.round(remaining[:, column] / scale), -INT8_LEVELS, INT8_LEVELS)
        error = (remaining[:, column] - levels[:, column] * scale) / factor[column, column]
        remaining[:, column + 1 :] -= error[:, None] * factor[column, column + 1 :][None, :]
    return levels.float()


def rounding_corrections(
    trunk: E5Encoder,
    absmax: Mapping[str, torch.Tensor],
    grams: Mapping[str, torch.Tensor],
    alpha: float = SMOOTHING_ALPHA,
    skip: Collection[str] = (),
    damping: float = GPTQ_DAMPING,
) -> dict[str, torch.Tensor]:
    """For each Linear but those in ``skip``: GPTQ's levels of its smoothed weight minus the nearest ones (int8), the
    corrections :func:`indexer.export.e5_int8.on_grid` applies. The smoothing multiplies input channel ``j`` by
    ``1 / s_j`` (``SmoothedLinear.inverse``), so the smoothed inputs' Gram matrix is ``gram · (s⁻¹ s⁻¹ᵀ)``."""
    corrections = {}
    model = smoothed(trunk, dict(absmax), alpha)  # the weights the int8 export rounds
    names = [name for name in linear_names(trunk) if name not in skip]
    for name in tqdm(names, desc="int8 rounding: GPTQ", unit="linear", leave=False):
        smoothed_linear = model.get_submodule(name)
        assert isinstance(smoothed_linear, SmoothedLinear)
        weight = smoothed_linear.linear.weight.detach()
        inverse = smoothed_linear.inverse.detach().double()
        gram = grams[name] * (inverse[:, None] * inverse[None, :])
        nearest, _scale = weight_levels(weight)
        difference = gptq_levels(weight, gram, damping) - nearest  # within ±2 levels in practice
        corrections[name] = difference.clamp(-INT8_LEVELS, INT8_LEVELS).to(torch.int8)
    return corrections
