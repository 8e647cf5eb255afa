"""Damaged index files: garbage in ``metadata.sqlite`` or in ``vectors.faiss`` makes every command that opens the
index (``index stats|list|add``, ``search``, ``serve``) answer one line, exit 2, naming what to run, with the file
left as it was; ``index rebuild`` re-derives a damaged vector file from the rows. They printed SQLAlchemy's or
FAISS's traceback (54 to 211 lines, exit 1; ``serve`` exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_random_images
from test_search_cli import cli_env  # noqa: F401  (the CLI's environment with the fake image encoder and models)
from test_serve_index_fits_cli import SHIPPED_ENCODER, index_folder, refused_in_one_line, relabel  # noqa: F401
from typer.testing import CliRunner

from app.cli import cli

runner = CliRunner()
GARBAGE = b"this is not an index file\n" * 200


def one_line(args: list[str]) -> str:
    result = runner.invoke(cli, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, (args, result.exit_code, result.output[-2000:])
    assert "Traceback" not in result.output
    return lines[0]


@pytest.fixture
def built(cli_env: Path) -> Path:  # noqa: F811
    write_random_images(cli_env / "photos", 5)
    result = runner.invoke(cli, ["index", "add", "photos", "-q"])
    assert result.exit_code == 0, result.output
    return cli_env / "var" / "index"


COMMANDS = [["index", "stats"], ["index", "list"], ["index", "add", "photos", "-q"], ["search", "dog"]]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_garbage_metadata_is_one_line_naming_what_to_do(built: Path, args: list[str]) -> None:
    (built / "metadata.sqlite").write_bytes(GARBAGE)
    line = one_line(args)
    assert line.startswith("error: the index in") and "metadata.sqlite is damaged" in line, line
    assert "polyglot index add PATH..." in line and "nothing was changed" in line, line
    assert (built / "metadata.sqlite").read_bytes() == GARBAGE


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_garbage_vectors_are_one_line_naming_index_rebuild(built: Path, args: list[str]) -> None:
    (built / "vectors.faiss").write_bytes(GARBAGE)
    line = one_line(args)
    assert line.startswith("error: the index in") and "vectors.faiss is damaged" in line, line
    assert "run `polyglot index rebuild`" in line, line


def test_a_cut_off_vector_file_is_one_line_too_and_index_rebuild_repairs_it(built: Path) -> None:
    data = (built / "vectors.faiss").read_bytes()
    (built / "vectors.faiss").write_bytes(data[: len(data) // 2])
    assert "run `polyglot index rebuild`" in one_line(["index", "stats"])
    rebuilt = runner.invoke(cli, ["index", "rebuild", "-q"])
    assert rebuilt.exit_code == 0 and "rebuilt 5 vectors" in rebuilt.output, rebuilt.output
    stats = runner.invoke(cli, ["index", "stats", "--json"])
    assert stats.exit_code == 0, stats.output
    numbers = json.loads(stats.output)
    assert numbers["count"] == numbers["rows"] == 5, numbers
    searched = runner.invoke(cli, ["search", "dog", "--k", "3"])
    assert searched.exit_code == 0, searched.output


def test_index_rebuild_refuses_garbage_metadata(built: Path) -> None:
    (built / "metadata.sqlite").write_bytes(GARBAGE)
    line = one_line(["index", "rebuild", "-q"])
    assert "metadata.sqlite is damaged" in line and "cannot help" in line, line


@pytest.mark.parametrize("damaged", ["metadata.sqlite", "vectors.faiss"])
@pytest.mark.parametrize("how", [["--no-index"], ["--images", "photos"]])
def test_serve_refuses_a_damaged_index_before_it_starts(index_folder: Path, damaged: str, how: list[str]) -> None:  # noqa: F811
    relabel(index_folder, SHIPPED_ENCODER, shipped_space=True)  # the models fit: only the damage is left
    (index_folder / damaged).write_bytes(GARBAGE)
    line = refused_in_one_line(how)
    assert line.startswith("error: the index in") and f"{damaged} is damaged" in line, line
    assert "serving on" not in line
