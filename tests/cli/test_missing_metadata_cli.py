"""``polyglot search``, ``index add`` and ``serve`` on an index whose ``metadata.sqlite`` is gone: one line that says
what is missing and what to do, exit 2, and the folder untouched. They created an empty database and dropped every
vector (``indexer/store/opening.py``: ``check_metadata``)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import write_random_images
from test_search_cli import cli_env  # noqa: F401  (the CLI's environment with the fake image encoder and models)
from typer.testing import CliRunner

from app.cli import cli
from indexer.store.sidecar import DB_NAME

runner = CliRunner()


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def refused_in_one_line(args: list[str]) -> str:
    """Run the command; it must exit 2 (an escaped exception is 1) with one line of output. Returns that line."""
    result = runner.invoke(cli, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, (args, result.exit_code, result.output[-2000:])
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def lost_database(cli_env: Path) -> Path:  # noqa: F811
    """An index of 4 photos built by the CLI, then its metadata database deleted; returns the index folder."""
    write_random_images(cli_env / "photos", 4)
    result = runner.invoke(cli, ["index", "add", "photos", "-q"])
    assert result.exit_code == 0, result.output
    folder = cli_env / "var" / "index"
    assert (folder / "vectors.faiss").is_file()
    (folder / DB_NAME).unlink()
    return folder


@pytest.mark.parametrize(
    "args",
    [
        ["search", "un chien sur la plage", "--lang", "fr"],
        ["search", "--image", "photos/img_0_000.jpg"],
        ["index", "add", "photos", "-q"],
        ["index", "list"],
    ],
)
def test_commands_refuse_an_index_whose_database_is_gone_and_keep_its_vectors(
    lost_database: Path, args: list[str]
) -> None:
    before = folder_bytes(lost_database)
    line = refused_in_one_line(args)
    assert line.startswith("error: the index in") and f"{lost_database / DB_NAME} is missing" in line
    assert "4 photos" in line and "vectors are left as they are" in line and "polyglot index add" in line
    assert folder_bytes(lost_database) == before and not (lost_database / DB_NAME).exists()


@pytest.mark.parametrize("how", [["--no-index"], ["--images", "photos"]])
def test_serve_refuses_it_before_starting(lost_database: Path, monkeypatch: pytest.MonkeyPatch, how: list[str]) -> None:
    """``serve --no-index`` (the container's command) would fail in uvicorn's start-up, a traceback; ``serve``
    indexing a folder dropped every vector first."""
    monkeypatch.delenv("POLYGLOT_TOWER_PATH")  # the shipped text model: serve checks it is there first
    with socket.socket() as sock:  # a free port, should the command get as far as serving
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    before = folder_bytes(lost_database)
    line = refused_in_one_line(["serve", *how, "--port", port, "--quiet"])
    assert f"{lost_database / DB_NAME} is missing" in line and "vectors are left as they are" in line
    assert folder_bytes(lost_database) == before
