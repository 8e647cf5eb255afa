"""Issue 24, finding 10: CLI errors are one line whatever the terminal width (rich wrapped them at 80 columns,
mid-sentence, so a test passed or failed with the length of the temporary path in the message)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
from conftest import write_random_images
from test_index_cli import cli_env  # noqa: F401  (the CLI's environment with the fake CNN)
from typer.testing import CliRunner

from app.cli import cli
from indexer.distributed.shards import ShardPlan

runner = CliRunner()


@pytest.mark.parametrize("columns", ["40", "80", "300"])
@pytest.mark.usefixtures("cli_env")
def test_errors_print_on_one_line_whatever_the_width(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 6))  # a long temporary path, as on some CI runners
    write_random_images(deep / "photos", 2, size=(8, 8))
    ShardPlan.open(deep / "shards", ["/elsewhere/a.jpg"], "efficientnet-lite0", 4)  # another run's shard folder
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(deep / "index"))
    result = runner.invoke(
        cli, ["index", "add", str(deep / "photos"), "--engine", "ray", "--shards", str(deep / "shards")]
    )
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert "holds shards of another run" in errors[0] and str(deep / "shards") in errors[0], result.output
    code = runner.invoke(cli, ["index", "add", str(deep / "nowhere")])
    lines = [line for line in code.output.splitlines() if line.strip()]
    assert code.exit_code == 2 and len(lines) == 1 and str(deep / "nowhere") in lines[0], code.output


@pytest.mark.usefixtures("cli_env")
def test_a_database_that_is_down_when_the_index_opens_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first connection, in ``ImageIndex.open``, once escaped as SQLAlchemy's traceback (exit 1)."""
    write_random_images(tmp_path / "photos", 2, size=(8, 8))
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("POLYGLOT_DATABASE_URL", "postgresql+psycopg://127.0.0.1:1/test")  # nothing listens on port 1
    result = runner.invoke(cli, ["index", "add", str(tmp_path / "photos")])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert lines[0].startswith("error: the database backend is unavailable") and "Traceback" not in result.output


@pytest.mark.usefixtures("cli_env")
def test_engine_ray_without_the_cluster_extra_is_one_line_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: a ModuleNotFoundError traceback (exit 1) when Ray is not installed."""
    write_random_images(tmp_path / "photos", 2, size=(8, 8))
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(tmp_path / "index"))
    for name in ("ray", "ray.data"):  # as if not installed: an import of it fails
        monkeypatch.setitem(sys.modules, name, None)
    result = runner.invoke(cli, ["index", "add", str(tmp_path / "photos"), "--engine", "ray", "--quiet"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith("error: --engine ray needs Ray") and "pip install '.[cluster]'" in lines[0], lines


@pytest.mark.parametrize("how", [["--no-index"], ["--images", "photos"], ["--images", "photos", "--watch"]])
@pytest.mark.usefixtures("cli_env")
def test_serve_with_the_database_down_is_one_line_like_index_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: list[str]
) -> None:
    """Issue 34, defect 6: ``serve`` exited 1 with a 167-line traceback (``--no-index``: uvicorn's start-up
    failure, exit 3, 220 lines)."""
    write_random_images(tmp_path / "photos", 2, size=(8, 8))
    monkeypatch.delenv("POLYGLOT_TOWER_PATH")  # the shipped text model: serve checks it is there first
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("POLYGLOT_DATABASE_URL", "postgresql+psycopg://127.0.0.1:1/test")  # nothing listens on port 1
    with socket.socket() as sock:  # a free port, should the old code get as far as serving
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    result = runner.invoke(cli, ["serve", *how, "--port", port, "--quiet"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, (result.exit_code, result.output[-2000:])
    assert lines[0].startswith("error: the database backend is unavailable") and "Traceback" not in result.output
