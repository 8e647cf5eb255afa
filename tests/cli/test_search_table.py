"""Issue 59: ``polyglot search``'s table fits 80 columns whatever the terminal's width (paths cut in the middle),
and the first search on a new cache says on stderr what it loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_random_images
from rich.cells import cell_len
from rich.console import Console
from test_search_cli import cli_env, runner  # noqa: F401

from app.cli import cli
from app.cli.search_cmd import middle
from indexer.query.onnx_text_side import OPTIMIZED_DIR

DEEP = Path("Pictures") / "Holidays in Portugal, summer 2024" / "Été à Lisboa — the old town and Belém"


@pytest.fixture
def indexed(cli_env: Path) -> Path:  # noqa: F811
    folder = cli_env / DEEP
    write_random_images(folder, 12, seed=5)
    result = runner.invoke(cli, ["index", "add", str(cli_env / "Pictures"), "-q"])
    assert result.exit_code == 0, result.output
    return folder


@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_table_fits_80_columns_whatever_the_terminal(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, columns: str
) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.setattr("app.cli.search_cmd.out", Console())  # reads the terminal's width now
    result = runner.invoke(cli, ["search", "a dog on the beach", "--lang", "en", "--k", "12"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines and max(cell_len(line) for line in lines) <= 80, result.stdout
    rows = [line for line in lines if line.strip().split(" ")[0].isdigit()]
    assert len(rows) == 12  # one line a result: nothing wraps
    for row in rows:
        path = row.split("  ")[-1].strip()
        assert "…" in path and path.startswith(str(indexed)[:8]) and path.endswith((".jpg", ".png")), row
    whole = json.loads(runner.invoke(cli, ["search", "a dog", "--lang", "en", "--json"]).stdout)
    assert all(Path(r["path"]).parent == indexed.resolve() for r in whole["results"])  # --json: whole paths


def test_paths_are_cut_in_the_middle() -> None:
    path = "/home/ana/Pictures/Holidays 2024/Été à Lisboa/IMG_0042.jpg"
    assert middle(path, 80) == path
    cut = middle(path, 30)
    assert cell_len(cut) <= 30 and cut.startswith("/home/ana") and cut.endswith("IMG_0042.jpg") and "…" in cut
    wide = middle("/p/東京の写真/とても長いフォルダの名前/写真_0001.jpg", 24)
    assert cell_len(wide) <= 24 and wide.endswith("0001.jpg")
    assert middle("abc", 1) == "…" and middle("abc", 0) == ""


def test_the_first_search_on_a_new_cache_says_what_it_loads(indexed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.cli.search_cmd.console", Console(stderr=True, force_terminal=True))
    first = runner.invoke(cli, ["search", "a dog", "--lang", "en", "--json"])
    assert first.exit_code == 0, first.output
    assert "loading text model" in first.stderr and "loading index…" in first.stderr
    assert json.loads(first.stdout)["results"]  # stdout stays the answer alone
    kept = Path("var") / "cache" / OPTIMIZED_DIR  # what the first search prepares: kept, later ones are quiet
    kept.mkdir(parents=True)
    (kept / "graph.onnx").write_bytes(b"kept")
    again = runner.invoke(cli, ["search", "a dog", "--lang", "en", "--json"])
    assert again.exit_code == 0 and "loading" not in again.stderr, again.stderr
    monkeypatch.setattr("app.cli.search_cmd.console", Console(stderr=True, force_terminal=False))
    (kept / "graph.onnx").unlink()
    piped = runner.invoke(cli, ["search", "a dog", "--lang", "en", "--json"])  # not a terminal: no notes
    assert piped.exit_code == 0 and "loading" not in piped.stderr
