"""``polyglot search``, ``index add`` and ``serve`` on an index whose ``metadata.sqlite`` is gone (or whose
``POLYGLOT_DATABASE_URL`` names a database without its photo rows): one line that says
what is missing and what to do, exit 2, and the folder untouched. They created an empty database and dropped every
vector (``indexer/store/opening.py``: ``check_metadata``)."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
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


@pytest.fixture
def empty_database(cli_env: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str, pg_schema: str) -> Iterator[str]:  # noqa: F811
    """An index of 4 photos built by the CLI with its rows on PostgreSQL (``pg_schema``), then
    POLYGLOT_DATABASE_URL pointed at a fresh, empty schema (a new pgdata volume, the wrong database); yields that
    schema's name."""
    from sqlalchemy import create_engine, text

    monkeypatch.setenv("POLYGLOT_DATABASE_URL", f"{postgres_url}?options=-csearch_path%3D{pg_schema}")
    write_random_images(cli_env / "photos", 4)
    result = runner.invoke(cli, ["index", "add", "photos", "-q"])
    assert result.exit_code == 0, result.output
    empty = f"test_{uuid.uuid4().hex[:12]}"
    engine = create_engine(postgres_url)
    with engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{empty}"'))
    monkeypatch.setenv("POLYGLOT_DATABASE_URL", f"{postgres_url}?options=-csearch_path%3D{empty}")
    try:
        yield empty
        with engine.connect() as connection:  # nothing was created there
            assert connection.execute(text(f"SELECT to_regclass('\"{empty}\".images')")).scalar() is None
    finally:
        with engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{empty}" CASCADE'))
        engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize(
    "args",
    [
        ["search", "un chien sur la plage", "--lang", "fr"],
        ["index", "list"],
        ["serve", "--no-index", "--quiet"],
    ],
)
def test_commands_refuse_an_empty_postgresql_database_and_keep_the_vectors(
    cli_env: Path,  # noqa: F811
    empty_database: str,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    if args[0] == "serve":
        monkeypatch.delenv("POLYGLOT_TOWER_PATH")  # the shipped text model: serve checks it is there first

        def serving(*args: object, **kwargs: object) -> None:  # the old code served, its vectors dropped
            raise AssertionError("serve got as far as starting the service")

        monkeypatch.setattr("uvicorn.run", serving)
    folder = cli_env / "var" / "index"
    before = folder_bytes(folder)
    line = refused_in_one_line(args)
    assert line.startswith("error: the index in") and "4 photos" in line and "has no images table" in line
    assert empty_database in line and "vectors are left as they are" in line and "POLYGLOT_DATABASE_URL" in line
    assert folder_bytes(folder) == before
