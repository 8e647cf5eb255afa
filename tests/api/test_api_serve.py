"""`polyglot serve`: which collection it indexes by default, and clear errors for bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_random_images
from typer.testing import CliRunner

from app.cli import cli, serve_cmd
from training.asset_paths import research_tower_path


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


def test_nothing_to_index_says_how_to_add_photos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A clone without ../shared/data and without scikit-image's samples served an empty index without a word.
    monkeypatch.setattr(serve_cmd, "default_collection", lambda: serve_cmd.Collection("samples", []))
    indexed: list[int] = []
    monkeypatch.setattr(serve_cmd, "index_collection", lambda settings, collection, *rest, **kw: indexed.append(1))
    served: list[int] = []
    monkeypatch.setattr("uvicorn.run", lambda *args, **kwargs: served.append(1))
    runner = CliRunner(
        env={"POLYGLOT_TOWER_PATH": str(research_tower_path("tower")), "POLYGLOT_HOME": str(tmp_path), "COLUMNS": "200"}
    )
    result = runner.invoke(cli, ["serve", "--quiet", "--port", "8123"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "warning: no sample photos to index" in output and "--images DIR" in output
    assert indexed == [1] and served == [1]  # it still serves: an index built before, or photos added later
    (tmp_path / "empty").mkdir()
    result = runner.invoke(cli, ["serve", "--quiet", "--port", "8123", "--images", str(tmp_path / "empty")])
    assert result.exit_code == 0, result.output
    assert "holds no photos this service reads" in " ".join(result.output.split()) and served == [1, 1]
