"""``polyglot serve`` refuses models and an index that do not fit together in one line (exit 2) before it starts:
the service's start-up refused them in uvicorn's lifespan, a traceback and exit 3 (``serve --no-index``, the
container's command; and ``serve --images`` once the text model was loaded). ``app/cli/serve_cmd.py``:
``check_index_fits``."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from conftest import write_random_images
from test_search_cli import cli_env  # noqa: F401  (the CLI's environment with the fake image encoder and models)
from typer.testing import CliRunner

import indexer.encoders.factory
from app.cli import cli
from indexer.settings import Settings
from indexer.store import opening
from indexer.store.sidecar import SIDECAR_NAME

runner = CliRunner()
SHIPPED_ENCODER = "efficientnet-lite2"  # the shipped text model's image encoder


def refused_in_one_line(args: list[str]) -> str:
    """Run ``serve``; it must exit 2 with one line of output (the lifespan's failure is exit 3, a traceback)."""
    with socket.socket() as sock:  # a free port, should the command get as far as serving
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    result = runner.invoke(cli, ["serve", *args, "--port", port, "--quiet"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, (args, result.exit_code, result.output[-2000:])
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def index_folder(cli_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """An index of 4 photos built by the CLI with the fake encoder; then the shipped text model and the real
    encoder factory, as ``serve`` runs (nothing is loaded before the refusals)."""
    write_random_images(cli_env / "photos", 4)
    result = runner.invoke(cli, ["index", "add", "photos", "-q"])
    assert result.exit_code == 0, result.output
    monkeypatch.delenv("POLYGLOT_TOWER_PATH")
    monkeypatch.delenv("POLYGLOT_IMAGE_ENCODER")
    monkeypatch.setattr("indexer.image_index.build_image_encoder", indexer.encoders.factory.build_image_encoder)
    return cli_env / "var" / "index"


def relabel(folder: Path, encoder: str, *, shipped_space: bool) -> None:
    """Make the sidecar say the index was built with ``encoder`` (in the shipped text model's image space, or in
    the plain ``l2`` space the fake environment built it in)."""
    sidecar = json.loads((folder / SIDECAR_NAME).read_text())
    sidecar["image_encoder"] = encoder
    if shipped_space:
        sidecar["image_space"] = opening.space_config(opening.default_image_space(Settings()))
    (folder / SIDECAR_NAME).write_text(json.dumps(sidecar))


@pytest.mark.parametrize("how", [["--no-index"], ["--images", "photos"]])
def test_an_index_built_with_another_image_encoder(index_folder: Path, how: list[str]) -> None:
    line = refused_in_one_line(how)
    assert line.startswith("error: the index in") and "built with image encoder 'fake-grid'" in line
    assert f"'{SHIPPED_ENCODER}' is configured" in line


def test_an_index_in_another_image_space_with_no_index(index_folder: Path) -> None:
    """Without --no-index it is rebuilt first (re-derived vectors); with it, the service cannot use it."""
    relabel(index_folder, SHIPPED_ENCODER, shipped_space=False)
    line = refused_in_one_line(["--no-index"])
    assert "stores vectors in image space 'l2'" in line and "polyglot index rebuild" in line
    assert "without --no-index" in line


@pytest.mark.parametrize("how", [["--no-index"], ["--images", "photos"]])
def test_an_image_encoder_the_text_model_was_not_trained_for(
    index_folder: Path, monkeypatch: pytest.MonkeyPatch, how: list[str]
) -> None:
    """POLYGLOT_IMAGE_ENCODER set to the index's encoder (as the refusal above advises), but the text model was
    trained for another: the text model's refusal, before the index is (re)indexed or the models are loaded."""
    relabel(index_folder, "resnet152", shipped_space=True)
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "resnet152")
    line = refused_in_one_line(how)
    assert f"trained for image encoder '{SHIPPED_ENCODER}'" in line and "POLYGLOT_IMAGE_ENCODER is 'resnet152'" in line
