"""``open_session``'s kept optimised copies (indexer/encoders/onnx_session.py): a folder holding the graph and its
weights beside it, opened later without optimising again and with the same outputs; the caller's check of the
source graph runs whenever ONNX Runtime reads that graph, and only then."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from indexer.encoders.onnx_session import KEPT_GRAPH, KEPT_WEIGHTS, kept_optimized_path, open_session


def write_graph(path: Path) -> np.ndarray:
    """y = relu(x @ W + b), W 64x32 (8 KB: above the size from which weights go into their own file)."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((64, 32)).astype(np.float32)
    bias = rng.standard_normal(32).astype(np.float32)
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["xw"]),
            helper.make_node("Add", ["xw", "b"], ["z"]),
            helper.make_node("Relu", ["z"], ["y"]),
        ],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 32])],
        [numpy_helper.from_array(weight, "W"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return weight


def test_a_kept_copy_holds_its_weights_beside_it_and_gives_the_same_outputs(tmp_path: Path) -> None:
    source = tmp_path / "dense.onnx"
    write_graph(source)
    x = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)
    checks: list[str] = []
    first = open_session(source, optimized_dir=tmp_path / "kept", check_source=lambda: checks.append("read"))
    kept = kept_optimized_path(source, tmp_path / "kept")
    assert checks == ["read"] and kept.name == KEPT_GRAPH and kept.is_file()
    assert (kept.parent / KEPT_WEIGHTS).stat().st_size >= 64 * 32 * 4  # the weights are beside the graph
    assert not list((tmp_path / "kept").glob(".*"))  # the partial folder was renamed, nothing left behind
    again = open_session(source, optimized_dir=tmp_path / "kept", check_source=lambda: checks.append("read"))
    assert checks == ["read"] and again._model_path == str(kept)  # the copy opened: the source was not read
    np.testing.assert_array_equal(again.run(None, {"x": x})[0], first.run(None, {"x": x})[0])
    plain = open_session(source, check_source=lambda: checks.append("read"))  # no cache: the source is read
    assert checks == ["read", "read"]
    np.testing.assert_array_equal(plain.run(None, {"x": x})[0], first.run(None, {"x": x})[0])


def test_a_copy_that_does_not_open_is_made_again_after_checking_the_source(tmp_path: Path) -> None:
    source = tmp_path / "dense.onnx"
    write_graph(source)
    open_session(source, optimized_dir=tmp_path / "kept")
    kept = kept_optimized_path(source, tmp_path / "kept")
    (kept.parent / KEPT_WEIGHTS).write_bytes(b"torn")
    checks: list[str] = []
    repaired = open_session(source, optimized_dir=tmp_path / "kept", check_source=lambda: checks.append("read"))
    assert checks == ["read"] and repaired._model_path == str(source)
    assert (kept.parent / KEPT_WEIGHTS).stat().st_size >= 64 * 32 * 4  # kept again, whole
    x = np.ones((1, 64), dtype=np.float32)
    reopened = open_session(source, optimized_dir=tmp_path / "kept")
    np.testing.assert_array_equal(reopened.run(None, {"x": x})[0], repaired.run(None, {"x": x})[0])


def test_a_failing_check_of_the_source_stops_the_load(tmp_path: Path) -> None:
    source = tmp_path / "dense.onnx"
    write_graph(source)

    def refuse() -> None:
        raise ValueError("checksum")

    for optimized_dir in (None, tmp_path / "kept"):
        try:
            open_session(source, optimized_dir=optimized_dir, check_source=refuse)
        except ValueError as exc:
            assert str(exc) == "checksum"
        else:
            raise AssertionError("the session opened without its check")
    assert not (tmp_path / "kept").exists() or not list((tmp_path / "kept").iterdir())
