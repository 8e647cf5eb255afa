"""`polyglot serve`: which collection it indexes by default, and clear errors for bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_random_images
from typer.testing import CliRunner

from app.cli import cli, serve_cmd
from indexer.asset_paths import research_tower_path


def test_default_collection_is_the_shared_dev_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "work" / "shared" / "data" / "m30k-f8k"
    paths = write_random_images(root / "images", 4)
    (root / "splits").mkdir()
    (root / "splits" / "dev.txt").write_text(f"{paths[0].name}\n{paths[2].name}\nmissing.jpg\n")
    rows = [
        {"image": paths[0].name, "lang": "fr", "text": "un chien", "source": "multi30k-task1"},
        {"image": paths[0].name, "lang": "en", "text": "a dog runs", "source": "flickr8k"},
        {"image": paths[1].name, "lang": "fr", "text": "un chat", "source": "multi30k-task1"},
    ]
    (root / "captions.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    repo = tmp_path / "work" / "repo"
    repo.mkdir()
    monkeypatch.chdir(repo)
    collection = serve_cmd.default_collection()
    assert collection.paths == [(root / "images" / p.name).resolve() for p in (paths[0], paths[2])]
    assert collection.captions == (root / "captions.jsonl").resolve()
    assert collection.caption_images == {paths[0].name, paths[2].name, "missing.jpg"}
    # Its own captions: dev images only, one per photo and language (task 1), so the first start stays short.
    assert [row.text for row in serve_cmd.caption_rows(collection, collection.captions)] == ["un chien"]
    # A caption file the user passes is indexed whole.
    own = tmp_path / "mine.jsonl"
    own.write_bytes((root / "captions.jsonl").read_bytes())
    assert len(serve_cmd.caption_rows(collection, own)) == 3


def test_fallback_is_scikit_image_photos(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_cmd, "shared_data_root", lambda: None)
    collection = serve_cmd.default_collection()
    names = {path.name for path in collection.paths}
    assert {"astronaut.png", "coffee.png", "chelsea.png"} <= names and collection.captions is None


def test_bad_arguments_are_clear_errors(tmp_path: Path) -> None:
    # Whether or not the student is in this checkout: the checks after the text model's are what is tested.
    runner = CliRunner(env={"POLYGLOT_TOWER_PATH": str(research_tower_path("tower"))})
    result = runner.invoke(cli, ["serve", "--images", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "not a folder" in " ".join(result.output.split())
    result = runner.invoke(cli, ["serve", "--images", str(tmp_path), "--captions", str(tmp_path / "c.jsonl")])
    assert result.exit_code == 2 and "no such file" in " ".join(result.output.split())
    assert runner.invoke(cli, ["serve", "--port", "0"]).exit_code == 2
    result = runner.invoke(cli, ["serve", "--images", str(tmp_path)], env={"POLYGLOT_TOWER_PATH": str(tmp_path)})
    assert result.exit_code == 2 and "no text model at" in " ".join(result.output.split())
