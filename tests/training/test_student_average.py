"""Averaging students (``polyglot models average-students``): the mean of hand-made deltas and heads, the int8
calibration left behind, and the refusals a person can act on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from typer.testing import CliRunner

from app.cli import cli
from indexer.student.model import INT8_RANGES, TRUNK_DELTA, delta_parts, is_student_folder
from indexer.tower import CONFIG_NAME, WEIGHTS_NAME
from training.student.average import AverageError, average_students, mean_tensors


def make_student(
    folder: Path,
    delta: dict[str, torch.Tensor],
    head: dict[str, torch.Tensor],
    steps: int,
    hidden: list[int] | None = None,
    layers: int = 12,
) -> Path:
    folder.mkdir(parents=True)
    save_file(delta, str(folder / TRUNK_DELTA))
    save_file(head, str(folder / WEIGHTS_NAME))
    config = {
        "kind": "e5-student",
        "input_dim": 384,
        "output_dim": 2,
        "hidden_dims": hidden if hidden is not None else [1024],
        "image_encoder": "efficientnet-lite2",
        "student": {"layers": layers, "recipe": {"steps": steps}},
        "training": {"history": [{"step": steps}]},
    }
    (folder / CONFIG_NAME).write_text(json.dumps(config), encoding="utf-8")
    (folder / "README.md").write_text(f"# Student\n\n## Recipe\n\n- {steps} steps\n", encoding="utf-8")
    return folder


def two_students(tmp_path: Path) -> tuple[Path, Path]:
    first = make_student(
        tmp_path / "a",
        {
            "layers.11.ffn_in.weight": torch.tensor([1.0, 2.0], dtype=torch.float16),
            "layers.10.value.weight": torch.tensor([2.0], dtype=torch.float16),  # the second left it alone
            INT8_RANGES + "layers.11.ffn_in": torch.tensor([5.0, 5.0]),  # calibration of these weights only
        },
        {"mlp.0.weight": torch.tensor([[1.0, -1.0]])},
        steps=1300,
    )
    second = make_student(
        tmp_path / "b",
        {"layers.11.ffn_in.weight": torch.tensor([3.0, 6.0], dtype=torch.float16)},
        {"mlp.0.weight": torch.tensor([[3.0, 1.0]])},
        steps=800,
    )
    return first, second


def test_average_of_two_students_by_hand(tmp_path: Path) -> None:
    first, second = two_students(tmp_path)
    out = tmp_path / "mean"
    average_students([first, second], out)
    parts = delta_parts(out)
    # (1 + 3) / 2, (2 + 6) / 2; a tensor only the first changed: (2 + 0) / 2, still float16 as the delta is.
    assert parts.weights["layers.11.ffn_in.weight"].tolist() == [2.0, 4.0]
    assert parts.weights["layers.10.value.weight"].tolist() == [1.0]
    assert parts.weights["layers.11.ffn_in.weight"].dtype == torch.float16
    assert not parts.ranges and not parts.fp32 and not parts.rounding  # the average is measured anew
    assert load_file(str(out / WEIGHTS_NAME))["mlp.0.weight"].tolist() == [[2.0, 0.0]]
    assert is_student_folder(out)
    config = json.loads((out / CONFIG_NAME).read_text(encoding="utf-8"))
    assert [each["folder"] for each in config["student"]["averaged"]] == [str(first), str(second)]
    assert [each["recipe"]["steps"] for each in config["student"]["averaged"]] == [1300, 800]
    assert "training" not in config  # one run's history does not describe the mean
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("# Polyglot Image Search student text encoder (averaged)")
    assert f"## Averaged student `{first}`" in card and "- 800 steps" in card and "CC BY-NC 4.0" in card


def test_an_average_of_an_average_names_every_run_in_it(tmp_path: Path) -> None:
    first, second = two_students(tmp_path)
    average_students([first, second], tmp_path / "mean")
    later = make_student(
        tmp_path / "c",
        {"layers.11.ffn_in.weight": torch.tensor([5.0, 8.0], dtype=torch.float16)},
        {"mlp.0.weight": torch.tensor([[1.0, 1.0]])},
        steps=1200,
    )
    average_students([tmp_path / "mean", later], tmp_path / "mean2")
    parts = delta_parts(tmp_path / "mean2")
    assert parts.weights["layers.11.ffn_in.weight"].tolist() == [3.5, 6.0]  # ((1 + 3) / 2 + 5) / 2, (4 + 8) / 2
    config = json.loads((tmp_path / "mean2" / CONFIG_NAME).read_text(encoding="utf-8"))
    outer = config["student"]["averaged"]
    assert [each["folder"] for each in outer] == [str(tmp_path / "mean"), str(later)]
    assert [each["folder"] for each in outer[0]["averaged"]] == [str(first), str(second)]
    assert [each["recipe"]["steps"] for each in outer[0]["averaged"]] == [1300, 800]
    assert "averaged" not in outer[1]  # a single run names no inner students


def test_mean_tensors_refuses_a_head_tensor_one_student_lacks() -> None:
    states = [{"w": torch.ones(2)}, {"w": torch.ones(2), "b": torch.ones(1)}]
    assert mean_tensors(states, missing_is_zero=True)["b"].tolist() == [0.5]
    with pytest.raises(AverageError, match="tensor b is in some of the students only"):
        mean_tensors(states, missing_is_zero=False)
    with pytest.raises(AverageError, match="different shapes"):
        mean_tensors([{"w": torch.ones(2)}, {"w": torch.ones(3)}], missing_is_zero=True)


def test_average_students_command_and_its_refusals(tmp_path: Path) -> None:
    first, second = two_students(tmp_path)
    runner = CliRunner()
    env = {"COLUMNS": "200"}
    average = ["models", "average-students"]
    result = runner.invoke(cli, [*average, str(first), str(second), "--out", str(tmp_path / "mean")], env=env)
    assert result.exit_code == 0, result.output
    assert "calibrate-student --student" in " ".join(result.output.split())
    assert delta_parts(tmp_path / "mean").weights["layers.11.ffn_in.weight"].tolist() == [2.0, 4.0]
    refusals = {
        "give at least two student folders": [str(first)],
        "is not a student folder": [str(first), str(tmp_path)],
        "a folder is given twice": [str(first), str(first)],
    }
    for message, folders in refusals.items():
        result = runner.invoke(cli, [*average, *folders, "--out", str(tmp_path / "other")], env=env)
        assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    result = runner.invoke(cli, [*average, str(first), str(second), "--out", str(first)], env=env)
    assert result.exit_code == 2 and "is one of the students" in result.output
    wider = make_student(tmp_path / "c", {}, {"mlp.0.weight": torch.ones(1, 2)}, steps=10, hidden=[512])
    result = runner.invoke(cli, [*average, str(first), str(wider), "--out", str(tmp_path / "x")], env=env)
    assert result.exit_code == 2 and "differ in 'hidden_dims'" in result.output
    deeper = make_student(tmp_path / "d", {}, {"mlp.0.weight": torch.ones(1, 2)}, steps=10, layers=4)
    result = runner.invoke(cli, [*average, str(first), str(deeper), "--out", str(tmp_path / "y")], env=env)
    assert result.exit_code == 2 and "different depths" in result.output
    assert not (tmp_path / "other").exists() and not (tmp_path / "x").exists()
