"""GPTQ's rounding of the student's int8 weights (training/student/int8_rounding.py): the update by hand, nothing to
do for uncorrelated inputs, a smaller output error than the nearest level, and ONNX Runtime's graph holding exactly
the corrected levels, chosen at calibration and kept in the delta file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from indexer.encoders.e5 import E5Weights
from indexer.export.e5_int8 import (
    export_smoothed_int8,
    input_absmax,
    linear_names,
    on_grid,
    smoothed,
    weight_levels,
)
from indexer.student.model import load_int8_fp32, load_int8_rounding, load_trunk, new_trunk
from training.student.int8_calibration import calibrate_student, padded_batches, text_inputs
from training.student.int8_rounding import gptq_levels, input_grams, rounding_corrections

TEXTS = ["a dog runs on the beach", "Ein Mann fährt Fahrrad.", "金鱼", "PANDA", "женщина на велосипеде"]


def test_gptq_by_hand() -> None:
    # One output channel; its largest weight 1.27 sets the scale 0.01. Column 0 (60.49 levels) rounds to 60, an
    # error e = 0.0049. Inputs 0 and 1 are correlated (ρ = 0.5, unit variance), input 2 is not: the least-squares
    # fix moves weight 1 by ρ·e (U of the inverse Gram matrix: U01 / U00 = −ρ), 30.40 + 0.245 levels → 31 where
    # the nearest level is 30; weight 2 is not moved.
    weight = torch.tensor([[0.6049, 0.3040, 1.27]])
    gram = torch.tensor([[1.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert gptq_levels(weight, gram, damping=0.0).tolist() == [[60.0, 31.0, 127.0]]
    assert weight_levels(weight)[0].tolist() == [[60.0, 30.0, 127.0]]


def test_uncorrelated_inputs_leave_the_nearest_level() -> None:
    weight = torch.randn(8, 16, generator=torch.Generator().manual_seed(0))
    assert torch.equal(gptq_levels(weight, torch.eye(16) * 3.0), weight_levels(weight)[0])


def test_gptq_moves_the_output_less_than_the_nearest_level() -> None:
    generator = torch.Generator().manual_seed(1)
    mixing = torch.randn(32, 32, generator=generator)
    inputs = torch.randn(2000, 32, generator=generator) @ mixing  # correlated inputs, as a layer's are
    weight = torch.randn(24, 32, generator=generator) * 0.05
    levels, scale = weight_levels(weight)
    nearest = levels * scale
    gptq = gptq_levels(weight, inputs.T.double() @ inputs.double()) * scale

    def output_error(quantised: torch.Tensor) -> float:
        return float(((inputs @ (weight - quantised).T) ** 2).mean())

    assert output_error(gptq) < 0.7 * output_error(nearest)
    assert (gptq - nearest).abs().max() <= 3 * scale.max()  # a few levels at most


def test_on_grid_keeps_each_rows_scale() -> None:
    weight = torch.tensor([[0.5, -1.27, 0.2], [0.1, 0.2, 0.3]])
    # Row 0: levels 50, -127, 20; a correction of the largest weight is overruled (it anchors the scale).
    correction = torch.tensor([[1, 1, -1], [0, 0, 0]], dtype=torch.int8)
    moved = on_grid(weight, correction)
    assert moved[0].tolist() == pytest.approx([0.51, -1.27, 0.19], abs=1e-6)
    # Row 1 uncorrected: its nearest levels, 0.1 · 127 / 0.3 = 42.3 → 42 and 84.7 → 85.
    assert moved[1].tolist() == pytest.approx([42 * 0.3 / 127, 85 * 0.3 / 127, 0.3], abs=1e-6)
    levels, _scale = weight_levels(moved)
    assert levels.tolist() == [[51.0, -127.0, 19.0], [42.0, 85.0, 127.0]]


def test_the_int8_graph_holds_the_corrected_levels(tmp_path: Path) -> None:
    weights = E5Weights()
    trunk = new_trunk(1, weights)
    batches = padded_batches(list(text_inputs(TEXTS, weights)), size=2)
    absmax = input_absmax(trunk, text_inputs(TEXTS, weights))
    grams = input_grams(trunk, batches)
    assert sorted(grams) == sorted(linear_names(trunk))
    with torch.no_grad():  # layer 0's query reads the embeddings' LayerNorm, over the texts' tokens only
        hidden = [(trunk.lower(embeddings, mask, 0), mask.bool()) for embeddings, mask in batches]
        by_hand = sum(states[mask].double().T @ states[mask].double() for states, mask in hidden)
    assert isinstance(by_hand, torch.Tensor)
    torch.testing.assert_close(grams["layers.0.query"], by_hand, rtol=1e-5, atol=1e-3)
    assert torch.equal(grams["layers.0.query"], grams["layers.0.key"])  # the same input
    corrections = rounding_corrections(trunk, absmax, grams, skip=["layers.0.ffn_out"])
    assert "layers.0.ffn_out" not in corrections and corrections["layers.0.query"].dtype == torch.int8
    assert 0 < int((corrections["layers.0.ffn_in"] != 0).sum()) < corrections["layers.0.ffn_in"].numel() // 2
    export_smoothed_int8(trunk, absmax, tmp_path / "int8.onnx", rounding=corrections)
    model = onnx.load(str(tmp_path / "int8.onnx"))
    initializers = {tensor.name: numpy_helper.to_array(tensor) for tensor in model.graph.initializer}
    producer = {output: node for node in model.graph.node for output in node.output}
    expected = smoothed(trunk, absmax, rounding=corrections).layers[0]
    for name in ("query", "ffn_in"):
        quantised = next(
            node
            for node in model.graph.node
            if node.op_type == "MatMulInteger" and producer[node.input[0]].name.startswith(f"/layers.0/{name}/")
        )
        levels = initializers[quantised.input[1]].astype(np.float32).T  # (in, out) in the graph
        wanted, _scale = weight_levels(getattr(expected, name).linear.weight)
        np.testing.assert_array_equal(levels, wanted.numpy())
        nearest, _ = weight_levels(smoothed(trunk, absmax).layers[0].get_submodule(name).linear.weight)
        assert not np.array_equal(levels, nearest.numpy())  # GPTQ's levels, not the nearest ones


def test_the_calibration_keeps_the_corrections_in_the_delta_file(tmp_path: Path) -> None:
    from test_student_int8 import student

    folder = student(tmp_path / "student", layers=1)
    before = load_trunk(folder).state_dict()
    calibrate_student(folder, TEXTS, fp32_share=0.3)
    kept, rounding = load_int8_fp32(folder), load_int8_rounding(folder)
    assert kept and sorted(set(rounding) | set(kept)) == sorted(linear_names(load_trunk(folder)))
    assert not set(rounding) & set(kept)  # a Linear kept in fp32 is not rounded
    after = load_trunk(folder).state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)  # the fp32 weights are untouched
    calibrate_student(folder, TEXTS, fp32_share=0.0, rounding="nearest")
    assert load_int8_rounding(folder) == {} and load_int8_fp32(folder) == []
    with pytest.raises(ValueError, match="rounding must be one of"):
        calibrate_student(folder, TEXTS, rounding="stochastic")
