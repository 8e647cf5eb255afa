"""``polyglot search`` on an index built by ``polyglot index add``, through typer's CliRunner (fake models)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import fake_load_models
from conftest import FakeImageEncoder, write_random_images
from typer.testing import CliRunner

import indexer.query as query
from app.cli import cli
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.query import QueryPipeline
from indexer.settings import Settings

runner = CliRunner()


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("POLYGLOT_DATABASE_URL", "POLYGLOT_INDEX_DIR", "POLYGLOT_CACHE_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "var"))
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(tmp_path / "no-tower"))  # plain l2 space, as the fake tower's
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", FakeImageEncoder.name)
    monkeypatch.setattr("indexer.image_index.build_image_encoder", lambda settings: FakeImageEncoder(0))
    monkeypatch.setattr(query, "load_models", fake_load_models)
    return tmp_path


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(cli, list(args))
    return result.exit_code, result.output


def test_text_and_image_search_on_an_index_built_by_the_cli(cli_env: Path) -> None:
    photos = write_random_images(cli_env / "photos", 6, seed=4)
    code, output = invoke("index", "add", "photos", "-q")
    assert code == 0, output
    code, output = invoke("search", "un chien sur la plage", "--lang", "fr", "--k", "4", "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert answer["lang"] == "fr" and answer["model"] == "fake-text" and len(answer["results"]) == 4
    assert [r["rank"] for r in answer["results"]] == [1, 2, 3, 4]
    scores = [r["score"] for r in answer["results"]]
    assert scores == sorted(scores, reverse=True)
    # The same ranking as the library's pipeline over the same index.
    settings = Settings()
    models = fake_load_models(settings)
    with ImageIndex.open(settings, image_space=ImageSpace("l2"), create=False, encoder=FakeImageEncoder(0)) as index:
        expected = QueryPipeline(models, settings).search_texts(index, [("un chien sur la plage", "fr", 4)])[0]
    assert [r["id"] for r in answer["results"]] == [h.id for h in expected]
    np.testing.assert_allclose(scores, [h.score for h in expected], atol=1e-4)
    # By image: the photo itself comes first, with a score of 1.
    code, output = invoke("search", "--image", str(photos[2]), "--json")
    assert code == 0, output
    best = json.loads(output)["results"][0]
    assert Path(best["path"]).name == photos[2].name and best["score"] == pytest.approx(1.0, abs=1e-3)
    code, output = invoke("search", "a red car", "--lang", "en")  # the table
    assert code == 0 and "a red car (en)" in output and "rank" in output
    assert max(len(line) for line in output.splitlines()) <= 80  # paths cut in the middle (test_search_table.py)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", "un chien", "--lang", "xx"], "unsupported --lang 'xx'"),
        (["search", "   "], "empty query"),
        (["search", "\u200b\u200b"], "empty query"),
        (["search", "--image", "missing.jpg"], "no such image file"),
        (["search"], "give a text QUERY or --image"),
        (["search", "chien", "--image", "x.jpg"], "give a text QUERY or --image"),
        (["search", "--image", "notes.txt"], "notes.txt: not an image"),
    ],
)
def test_user_errors_are_clear(cli_env: Path, args: list[str], message: str) -> None:
    write_random_images(cli_env / "photos", 2)
    (cli_env / "notes.txt").write_text("not an image")
    assert invoke("index", "add", "photos", "-q")[0] == 0
    code, output = invoke(*args)
    assert code == 2 and message in " ".join(output.split()), output


def test_empty_or_missing_index(cli_env: Path) -> None:
    code, output = invoke("search", "a dog", "--lang", "en")
    assert code == 2 and "no index" in output and "polyglot index add" in " ".join(output.split())
    write_random_images(cli_env / "photos", 1)
    assert invoke("index", "add", "photos", "-q")[0] == 0
    assert invoke("index", "remove", "1")[0] == 0
    code, output = invoke("search", "a dog", "--lang", "en")
    assert code == 2 and "is empty" in " ".join(output.split())
