"""Which Linears the student's int8 graph keeps in fp32 (training/student/int8_sensitivity.py): the PyTorch rounding
is ONNX Runtime's, a Linear's measured error is what its int8 MatMul does in the real graph, the choice by hand, and
a kept Linear is an fp32 MatMul in the exported graph, chosen at calibration and kept in the delta file."""

from __future__ import annotations

import platform
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from indexer.encoders.e5 import E5Weights
from indexer.export.e5 import int8_pairs_saturate, quantize_int8
from indexer.export.e5_int8 import export_smoothed_int8, input_absmax, linear_names, matmul_node
from indexer.student.model import load_int8_fp32, load_int8_ranges, load_trunk, new_trunk, write_int8_ranges
from training.student.int8_calibration import calibrate_student, padded_batches, text_inputs
from training.student.int8_sensitivity import fake_dynamic_int8, fp32_choice, linear_macs, linear_sensitivity

TEXTS = ["a dog runs on the beach", "Ein Mann fährt Fahrrad.", "金鱼", "PANDA", "женщина на велосипеде"]


def run_onnx(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


def test_the_rounding_by_hand() -> None:
    # Input range [-1, 2]: scale 3/255, zero point 85; 0.5 / scale = 42.5 rounds to 42 (half to even) → 42 · 3/255.
    # Weights: scale 1/127; -0.5 · 127 = -63.5 → -64, 0.25 · 127 = 31.75 → 32.
    x = torch.tensor([[[-1.0, 0.5, 2.0]]])
    weight = torch.tensor([[1.0, -0.5, 0.25]])
    out = fake_dynamic_int8(x, torch.ones(1, 1), weight, torch.tensor([0.1]))
    expected = -1.0 * 1.0 + (42 * 3 / 255) * (-64 / 127) + 2.0 * (32 / 127) + 0.1
    assert float(out) == pytest.approx(expected, abs=1e-6)


def test_each_text_is_rounded_on_its_own_grid_and_padding_is_left_out() -> None:
    x = torch.tensor([[[1.0], [100.0]], [[1.0], [3.0]]])  # the first text's second token is padding
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    out = fake_dynamic_int8(x, mask, torch.ones(1, 1), torch.zeros(1))
    assert float(out[0, 0, 0]) == pytest.approx(1.0, abs=1e-6)  # alone, 1.0 is the top of its own grid
    assert float(out[1, 0, 0]) == pytest.approx(round(255 / 3) * 3 / 255, abs=1e-6)  # 1.0 on [0, 3]'s grid


def test_the_saturation_of_a_cpu_without_vnni_by_hand(tmp_path: Path) -> None:
    # Inputs 1.0, 1.0: levels 255, 255 (zero point 0); weights 1.0, 1.0: levels 127, 127. Exact: 2.0. Added in 16
    # bits the pair 2 · 255 · 127 = 64,770 is clipped to 32,767: 32,767 / 255 / 127.
    x, weight = torch.ones(1, 1, 2), torch.ones(1, 2)
    assert float(fake_dynamic_int8(x, torch.ones(1, 1), weight, torch.zeros(1))) == pytest.approx(2.0)
    saturated = fake_dynamic_int8(x, torch.ones(1, 1), weight, torch.zeros(1), saturating=True)
    assert float(saturated) == pytest.approx(32767 / 255 / 127)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 fma\n")
    assert int8_pairs_saturate(cpuinfo) is (platform.machine().lower() in ("x86_64", "amd64"))
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_vnni\n")
    assert int8_pairs_saturate(cpuinfo) is False


def test_this_cpus_int8_kernel_is_computed_here(tmp_path: Path) -> None:
    # Large inputs on every channel: on a CPU without VNNI some pairs saturate, and the emulation says which.
    rng = np.random.default_rng(1)
    weight = rng.standard_normal((64, 16)).astype(np.float32)
    x = (rng.standard_normal((1, 5, 64)) * 3).astype(np.float32)
    served = run_onnx(one_linear(tmp_path, weight, np.zeros(16, np.float32), x.shape), {"x": x})
    saturating = int8_pairs_saturate()
    ours = fake_dynamic_int8(
        torch.from_numpy(x), torch.ones(1, 5), torch.from_numpy(weight.T), torch.zeros(16), saturating=saturating
    )
    np.testing.assert_allclose(ours.numpy(), served, atol=1e-4)
    other = fake_dynamic_int8(
        torch.from_numpy(x), torch.ones(1, 5), torch.from_numpy(weight.T), torch.zeros(16), saturating=not saturating
    )
    assert np.abs(other.numpy() - served).max() > 0.1  # the other kernel is told apart: some pairs do saturate


def one_linear(folder: Path, weight: np.ndarray, bias: np.ndarray, shape: tuple[int, ...]) -> Path:
    """``x @ weight + bias`` as a graph, quantised by :func:`quantize_int8`; returns the int8 graph's path."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y0"], name="mm"), helper.make_node("Add", ["y0", "b"], ["y"])],
        "one_linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*shape[:-1], weight.shape[1]])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(folder / "fp32.onnx"))
    quantize_int8(folder / "fp32.onnx", folder / "int8.onnx")
    return folder / "int8.onnx"


def test_the_rounding_is_onnx_runtimes(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    weight = (rng.standard_normal((6, 4)) * np.array([[3.0], [0.1], [1.0], [1.0], [0.5], [2.0]])).astype(np.float32)
    # Every second input channel's weights are zero: on a CPU without VNNI (AVX2), ONNX Runtime's u8×s8 kernel adds
    # the products of two neighbouring input channels in 16 bits, with saturation (up to 2 · 255 · 127 > 32,767);
    # with one of each pair zero nothing saturates and the rounding alone is compared, on every x86 CPU.
    weight[1::2] = 0.0
    bias = rng.standard_normal(4).astype(np.float32)
    x = (rng.standard_normal((1, 5, 6)) * np.array([8.0, 1, 1, 0.2, 1, 1])).astype(np.float32)
    served = run_onnx(one_linear(tmp_path, weight, bias, x.shape), {"x": x})
    ours = fake_dynamic_int8(torch.from_numpy(x), torch.ones(1, 5), torch.from_numpy(weight.T), torch.from_numpy(bias))
    exact = x @ weight + bias
    assert np.abs(served - exact).max() > 1e-3  # int8 does move it…
    np.testing.assert_allclose(ours.numpy(), served, atol=1e-5)  # …exactly as computed here


def test_a_linears_measured_error_is_what_its_int8_matmul_does_in_the_graph(tmp_path: Path) -> None:
    weights = E5Weights()
    trunk = new_trunk(1, weights)
    inputs = list(text_inputs(TEXTS, weights))
    absmax = input_absmax(trunk, inputs)
    # As this machine's int8 kernel computes (saturating on an x86 CPU without VNNI), to compare with its graph.
    sensitivity = linear_sensitivity(trunk, absmax, padded_batches(inputs, size=2), saturating=int8_pairs_saturate())
    assert sorted(sensitivity) == sorted(linear_names(trunk)) and all(value > 0 for value in sensitivity.values())
    feeds = [{"embeddings": embeddings.numpy(), "mask": mask.numpy()} for embeddings, mask in inputs]
    names = linear_names(trunk)
    with tempfile.TemporaryDirectory() as scratch:
        reference_path = Path(scratch) / "reference.onnx"
        export_smoothed_int8(trunk, absmax, reference_path, keep_fp32=names)  # nothing quantised
        reference = np.stack([run_onnx(reference_path, feed)[0] for feed in feeds])
        for name in ("layers.0.query", "layers.0.ffn_out"):
            alone = Path(scratch) / f"{name}.onnx"
            export_smoothed_int8(trunk, absmax, alone, keep_fp32=[other for other in names if other != name])
            moved = np.stack([run_onnx(alone, feed)[0] for feed in feeds])
            cosine = (moved * reference).sum(1) / np.linalg.norm(moved, axis=1) / np.linalg.norm(reference, axis=1)
            assert float((1 - cosine).mean()) == pytest.approx(sensitivity[name], rel=0.05, abs=1e-7)


def test_the_choice_by_hand() -> None:
    macs = {"a": 100, "b": 400, "c": 100, "d": 100}
    sensitivity = {"a": 1.0, "b": 8.0, "c": 3.0, "d": 0.0}
    # Per multiply: c 0.03, b 0.02, a 0.01, d nothing. 30 % of 700 = 210: c (100), then b does not fit, a (100).
    assert fp32_choice(sensitivity, macs, 0.3) == {"c": 3.0, "a": 1.0}
    assert fp32_choice(sensitivity, macs, 1.0) == {"c": 3.0, "b": 8.0, "a": 1.0}  # d's int8 costs nothing
    assert fp32_choice(sensitivity, macs, 0.0) == {}
    with pytest.raises(ValueError, match="within"):
        fp32_choice(sensitivity, macs, 1.5)
    assert linear_macs(new_trunk(1))["layers.0.ffn_in"] == 384 * 1536


def test_kept_linears_are_fp32_matmuls_in_the_graph(tmp_path: Path) -> None:
    trunk = new_trunk(1)
    absmax = {name: torch.ones(1536 if name.endswith("ffn_out") else 384) for name in linear_names(trunk)}
    export_smoothed_int8(trunk, absmax, tmp_path / "int8.onnx", keep_fp32=["layers.0.ffn_out"])
    nodes = onnx.load(str(tmp_path / "int8.onnx")).graph.node
    assert sum(node.op_type == "MatMulInteger" for node in nodes) == 5
    assert matmul_node("layers.0.ffn_out") in {node.name for node in nodes if node.op_type == "MatMul"}
    with pytest.raises(ValueError, match=r"no Linear layers\.3\.query"):
        export_smoothed_int8(trunk, absmax, tmp_path / "x.onnx", keep_fp32=["layers.3.query"])


def test_the_calibration_keeps_its_choice_in_the_delta_file(tmp_path: Path) -> None:
    from test_student_int8 import student

    folder = student(tmp_path / "student", layers=1)
    before = load_trunk(folder).state_dict()
    assert load_int8_fp32(folder) == []
    calibrate_student(folder, TEXTS, fp32_share=0.3)
    kept = load_int8_fp32(folder)
    macs = linear_macs(load_trunk(folder))
    assert kept and sum(macs[name] for name in kept) <= 0.3 * sum(macs.values())
    after = load_trunk(folder).state_dict()
    assert all(torch.equal(before[name], after[name]) for name in before)  # the weights are untouched
    write_int8_ranges(folder, load_int8_ranges(folder) or {})  # a calibration without a choice replaces it
    assert load_int8_fp32(folder) == []
    write_int8_ranges(folder, {}, {"layers.0.key": 0.5, "layers.0.ffn_in": 2.0})
    assert load_int8_fp32(folder) == ["layers.0.ffn_in", "layers.0.key"]  # most sensitive first
