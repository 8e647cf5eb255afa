"""``polyglot serve`` checks the address before it indexes anything or prints "serving on": a port another
server listens on printed "serving on http://…", then uvicorn's "address already in use", exit 3. Now one line,
exit 2 (the CLI's usage error), and the service is never started."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli import cli, serve_cmd
from training.asset_paths import research_tower_path


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """``serve --no-index`` on an empty home; uvicorn.run only writes down where it was asked to listen."""
    for key in ("POLYGLOT_DATABASE_URL", "POLYGLOT_INDEX_DIR", "POLYGLOT_IMAGES_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(research_tower_path("tower")))
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "300")
    calls: list[tuple[str, int]] = []
    monkeypatch.setattr("uvicorn.run", lambda app, host, port, **kwargs: calls.append((host, port)))
    monkeypatch.setattr(serve_cmd, "index_collection", lambda *args, **kwargs: None)
    return calls


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another server listens on (127.0.0.1)."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


def serve(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(cli, ["serve", "--no-index", "--quiet", *args])
    return result.exit_code, [line for line in result.output.splitlines() if line.strip()]


def test_a_taken_port_is_one_line_before_serving_on(started: list[tuple[str, int]], taken: int) -> None:
    code, lines = serve("--host", "127.0.0.1", "--port", str(taken))
    assert code == 2 and len(lines) == 1, lines
    assert (
        lines[0]
        == f"error: port {taken} on 127.0.0.1 is already in use (another server listens there): choose another --port"
    )
    assert started == []


def test_indexing_waits_for_no_taken_port(
    started: list[tuple[str, int]], taken: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --no-index the port is checked before the photos are indexed (which can take minutes)."""
    indexed: list[int] = []
    monkeypatch.setattr(serve_cmd, "index_collection", lambda *args, **kwargs: indexed.append(1))
    result = CliRunner().invoke(cli, ["serve", "--quiet", "--port", str(taken)])
    assert result.exit_code == 2 and "already in use" in result.output, result.output
    assert indexed == [] and started == []


def test_an_address_of_another_machine_is_one_line(started: list[tuple[str, int]]) -> None:
    code, lines = serve("--host", "203.0.113.7", "--port", "8765")  # TEST-NET-3: never this machine's
    assert code == 2 and len(lines) == 1 and "not an address of this machine" in lines[0], lines
    assert started == []


def test_a_free_port_is_served(started: list[tuple[str, int]]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, lines = serve("--port", str(port))
    assert code == 0, lines
    assert lines[-1].startswith(f"serving on http://127.0.0.1:{port}") and started == [("127.0.0.1", port)]
