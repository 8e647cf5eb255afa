"""Where the student's int8 error comes from: the weights' rounding, the activations' rounding, or both; and GPTQ.

    .venv/bin/python benchmarks/student_int8_error_parts.py --student var/students/w12r7 --texts 300 \
        --md benchmarks/student_int8-error-parts.md

Every Linear of the smoothed trunk (indexer/export/e5_int8.py) is computed as ONNX Runtime's dynamic int8 computes it
(``fake_dynamic_int8``, tested equal to the real graph on CPUs whose int8 kernel does not saturate), with only its
weights rounded, only its inputs rounded (one grid per text, as served; or one grid per token, which ONNX Runtime's
fused kernel does not offer), or both; the weights rounded to the nearest level or by GPTQ
(training/student/int8_rounding.py, fitted on the calibration sample). Error: mean ``1 − cosine`` of the pooled
vector to fp32 over held-apart training texts (none in the calibration sample). No dev text.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from indexer.encoders.e5 import E5Weights
from indexer.export.e5_int8 import SMOOTHED, SmoothedLinear, input_absmax, smoothed, weight_levels
from indexer.student.model import load_trunk
from training.student.int8_calibration import calibration_texts, padded_batches, text_inputs
from training.student.int8_rounding import input_grams, rounding_corrections
from training.student.int8_sensitivity import fake_dynamic_int8, uint8_levels
from training.student.words import read_lexicons

SHARED = Path("../shared/data")


def per_token_inputs(x: torch.Tensor) -> torch.Tensor:
    """Each token's input on its own uint8 grid (what a per-row dynamic quantisation would give)."""
    levels, zero, scale = uint8_levels(x, x.amin(dim=2, keepdim=True), x.amax(dim=2, keepdim=True))
    return (levels - zero) * scale


def per_text_inputs(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Each text's input on its own uint8 grid, as served: ``fake_dynamic_int8`` through an identity weight (127
    levels exactly, so only the input is rounded)."""
    identity = torch.eye(x.shape[-1])
    return fake_dynamic_int8(x, mask, identity, torch.zeros(x.shape[-1]))


def nearest_weight(weight: torch.Tensor) -> torch.Tensor:
    levels, scale = weight_levels(weight)
    return levels * scale


Compute = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

# (x, mask, weight, bias) → output; ``weight`` is the smoothed one, or already on GPTQ's levels (nearest_weight keeps
# a weight that is on its levels where it is).
COMPUTE: dict[str, Compute] = {
    "weights": lambda x, mask, weight, bias: x @ nearest_weight(weight).T + bias,
    "inputs per text": lambda x, mask, weight, bias: per_text_inputs(x, mask) @ weight.T + bias,
    "inputs per token": lambda x, mask, weight, bias: per_token_inputs(x) @ weight.T + bias,
    "both per text": fake_dynamic_int8,
    "both per token": lambda x, mask, weight, bias: per_token_inputs(x) @ nearest_weight(weight).T + bias,
}


class Rounded(nn.Module):
    """A smoothed Linear computed by one of ``COMPUTE`` over one batch's texts (``mask``)."""

    def __init__(self, original: SmoothedLinear, weight: torch.Tensor, compute: Compute) -> None:
        super().__init__()
        self.original, self.weight, self.compute = original, weight, compute
        self.mask = torch.ones(1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.compute(x * self.original.inverse, self.mask, self.weight, self.original.linear.bias)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--student", type=Path, required=True)
    parser.add_argument("--texts", type=int, default=300, help="held-apart texts measured")
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    captions = [SHARED / "m30k-text" / "captions.jsonl", SHARED / "more-langs" / "text-captions.jsonl"]
    tables = read_lexicons(SHARED / "lexicons")
    calibration = calibration_texts(captions, tables)
    seen = set(calibration)
    held = [text for text in calibration_texts(captions, tables, seed=1) if text not in seen][: args.texts]
    weights = E5Weights()
    trunk = load_trunk(args.student, weights)
    absmax = input_absmax(trunk, text_inputs(calibration, weights))
    calibration_batches = padded_batches(list(text_inputs(calibration, weights)))
    gptq = rounding_corrections(trunk, absmax, input_grams(trunk, calibration_batches))
    model = smoothed(trunk, absmax)
    gptq_model = smoothed(trunk, absmax, rounding=gptq)
    batches = padded_batches(list(text_inputs(held, weights)))
    with torch.no_grad():
        reference = [nn.functional.normalize(model(embeddings, mask), dim=-1) for embeddings, mask in batches]
    rows = []
    cases = [
        ("weights only, nearest level", model, "weights"),
        ("weights only, GPTQ", gptq_model, "weights"),
        ("inputs only, one grid per text (served)", model, "inputs per text"),
        ("inputs only, one grid per token", model, "inputs per token"),
        ("both, nearest level, one grid per text (served until now)", model, "both per text"),
        ("both, GPTQ, one grid per text", gptq_model, "both per text"),
        ("both, nearest level, one grid per token", model, "both per token"),
        ("both, GPTQ, one grid per token", gptq_model, "both per token"),
    ]
    for label, source, kind in cases:
        rounded_model = copy.deepcopy(model)
        modules = []
        for number, layer in enumerate(rounded_model.layers):
            for name in SMOOTHED:
                weight = getattr(source.layers[number], name).linear.weight
                module = Rounded(getattr(layer, name), weight, COMPUTE[kind])
                setattr(layer, name, module)
                modules.append(module)
        cosines = []
        with torch.no_grad():
            for (embeddings, mask), target in zip(batches, reference, strict=True):
                for module in modules:
                    module.mask = mask
                moved = nn.functional.normalize(rounded_model(embeddings, mask), dim=-1)
                cosines.append((moved * target).sum(dim=-1))
        cosine = torch.cat(cosines)
        rows.append(f"| {label} | {float((1 - cosine).mean()):.6f} | {float(cosine.min()):.4f} |")
        print(rows[-1], flush=True)
    text = "\n".join(
        [
            f"# Where the int8 error of `{args.student}` comes from",
            "",
            f"Command: `.venv/bin/python benchmarks/student_int8_error_parts.py {' '.join(sys.argv[1:])}`",
            f"Mean 1 − cosine to fp32 over {len(held)} held-apart training texts; PyTorch's emulation of ONNX "
            "Runtime's dynamic int8 (SmoothQuant α 0.8, every Linear rounded).",
            "",
            "| rounded | mean 1 − cosine | lowest cosine |",
            "| --- | ---: | ---: |",
            *rows,
        ]
    )
    print(text)
    if args.md is not None:
        args.md.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
