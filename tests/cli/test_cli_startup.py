"""`polyglot` starts without torch unless the command needs it (app/cli/__init__.py's lazy root).

torch's import costs ~2 s of every start-up on a 2-core machine: `polyglot index add` of 40 12-Mpx photos took
4.9 s end to end with it and 2.5 s without. Each check runs in a fresh interpreter, as a user's command does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import write_random_images
from fresh_cli import REPO, clean_env, run_polyglot
from typer.testing import CliRunner

from app.cli import all_commands, cli
from indexer.built_models import build
from indexer.export.registry import IMAGE_EXPORTS


def test_importing_the_command_line_does_not_import_torch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from app.cli import cli; print('torch' in sys.modules)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"


def test_index_add_with_the_onnx_encoder_never_imports_torch(tmp_path: Path) -> None:
    models = tmp_path / "models"
    build(IMAGE_EXPORTS["efficientnet-lite0"], models)  # torch exports it here, in the test's process
    photos = tmp_path / "photos"
    write_random_images(photos, 3)
    env = {
        **clean_env(tmp_path / "home"),
        "POLYGLOT_MODELS_DIR": str(models),
        "POLYGLOT_IMAGE_ENCODER": "efficientnet-lite0",
        "POLYGLOT_ENCODER_BACKEND": "onnx",
        "POLYGLOT_IMAGE_PRECISION": "fp32",
    }
    status, output, torch_imported = run_polyglot(["index", "add", str(photos)], env)
    assert status == 0, output
    assert "added 3" in output
    assert not torch_imported, output
    status, output, torch_imported = run_polyglot(["index", "stats"], env)
    assert status == 0 and "images" in output and not torch_imported, output


def test_a_command_that_needs_torch_loads_it_when_it_runs(tmp_path: Path) -> None:
    status, output, torch_imported = run_polyglot(["train", "tower", "--help"], clean_env(tmp_path))
    assert status == 0 and "--loss" in output and torch_imported, output


def test_help_lists_every_command_with_its_help_in_order() -> None:
    result = CliRunner().invoke(cli, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    listed = [line.split()[1] for line in result.output.splitlines() if line.startswith("│ ") and "  " in line[2:]]
    commands = all_commands()  # the product's, then the lab's (this checkout has it)
    shown = [name for name in commands if name != "train-student"]  # the hidden old spelling
    assert [name for name in listed if name in commands] == shown
    assert "Build and maintain the image index." in result.output


@pytest.mark.parametrize("name", list(all_commands()))
def test_every_listed_command_is_built_from_its_module(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert f"polyglot {name}" in result.output


def test_an_unknown_command_is_a_usage_error_that_suggests_the_command_meant() -> None:
    """Typer suggests from the group's commands: every listed name, built or not (it once saw none)."""
    result = CliRunner().invoke(cli, ["indx"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "No such command" in result.output
    assert "Did you mean 'index'?" in result.output
