"""CaptionIndex (per-language FAISS + SQLite) and `polyglot index captions`."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from api_fixtures import CAPTIONS, fake_text_embedder
from conftest import clear_polyglot_env
from typer.testing import CliRunner

from app.cli import cli
from indexer.captions import Caption, CaptionFileError, CaptionIndex, read_captions

pytest_plugins = ("api_fixtures",)


@pytest.fixture
def index(tmp_path: Path):
    captions = CaptionIndex.open(tmp_path / "captions", fake_text_embedder(), tmp_path / "cache")
    yield captions
    captions.close()


def test_add_search_per_language(index: CaptionIndex) -> None:
    assert index.add(CAPTIONS) == 6
    assert index.stats()["languages"] == {"de": 1, "en": 3, "fr": 2}
    query = index.embedder.embed(["un chien court sur la plage"])[0]
    found = index.search(query, ["fr", "en", "pt"], k=5)
    assert found["pt"] == [] and len(found["en"]) == 3 and len(found["fr"]) == 2
    best = found["fr"][0]
    assert best.text == "un chien court sur la plage" and best.score == pytest.approx(1.0, abs=1e-5)
    assert best.image == "1.jpg" and best.source == "test" and best.lang == "fr"
    assert [h.score for h in found["en"]] == sorted((h.score for h in found["en"]), reverse=True)


def test_duplicates_are_skipped_and_remove_filters(index: CaptionIndex) -> None:
    index.add(CAPTIONS)
    assert index.add([*CAPTIONS, Caption("en", "a new caption", "9.jpg", "other")]) == 1
    assert len(index) == 7
    assert index.remove(source="other") == 1
    assert index.remove(lang="fr", image="2.jpg") == 1
    query = index.embedder.embed(["deux enfants jouent au football"])[0]
    assert [h.text for h in index.search(query, ["fr"], k=5)["fr"]] == ["un chien court sur la plage"]
    with pytest.raises(ValueError, match="at least one"):
        index.remove()


def test_reopen_persists_and_repairs_missing_or_stale_vectors(tmp_path: Path) -> None:
    folder, cache = tmp_path / "captions", tmp_path / "cache"
    first = CaptionIndex.open(folder, fake_text_embedder(), cache)
    first.add(CAPTIONS)
    query = first.embedder.embed(["a dog runs on the beach"])[0]
    expected = [(h.id, round(h.score, 5)) for h in first.search(query, ["en"], 3)["en"]]
    first.close()
    (folder / "en.faiss").unlink()  # a crash between the SQL commit and the FAISS write
    second = CaptionIndex.open(folder, fake_text_embedder(), cache)
    assert [(h.id, round(h.score, 5)) for h in second.search(query, ["en"], 3)["en"]] == expected
    second.close()
    other = fake_text_embedder()
    with torch.no_grad():
        for parameter in other.tower.parameters():
            parameter.add_(0.5)  # a retrained tower: every caption must be re-embedded
    third = CaptionIndex.open(folder, other, cache)
    fresh = other.embed(["a dog runs on the beach"])[0]
    top = third.search(fresh, ["en"], 1)["en"][0]
    assert top.text == "a dog runs on the beach" and top.score == pytest.approx(1.0, abs=1e-5)
    assert json.loads((folder / "captions.json").read_text())["counts"] == {"de": 1, "en": 3, "fr": 2}
    third.close()


def test_search_rejects_wrong_dimension(index: CaptionIndex) -> None:
    index.add(CAPTIONS)
    with pytest.raises(ValueError, match="dimensions"):
        index.search(np.ones(3, dtype=np.float32), ["en"], 1)


def test_read_captions_filters_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "c.jsonl"
    good.write_text(
        '{"image": "1.jpg", "lang": "en", "text": " A dog. ", "source": "s"}\n\n'
        '{"image": "1.jpg", "lang": "FR", "text": "Un chien."}\n'
        '{"image": "2.jpg", "lang": "de", "text": "   "}\n',
        encoding="utf-8",
    )
    rows = read_captions(good)
    assert [(r.lang, r.text) for r in rows] == [("en", "A dog."), ("fr", "Un chien.")]
    assert [r.lang for r in read_captions(good, ["fr"])] == ["fr"]
    for content, message in (
        ("not json\n", "not JSON"),
        ('{"lang": "en"}\n', "string fields"),
        ('{"lang": "english!", "text": "x"}\n', "not a language code"),
    ):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(CaptionFileError, match=message):
            read_captions(bad)
    with pytest.raises(CaptionFileError, match="cannot read"):
        read_captions(tmp_path / "missing.jsonl")


def test_captions_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import app.cli.captions_cmd as captions_cmd

    for key in ("POLYGLOT_INDEX_DIR", "POLYGLOT_CACHE_DIR", "POLYGLOT_CAPTIONS_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(captions_cmd, "load_embedder", lambda settings: fake_text_embedder())
    source = tmp_path / "captions.jsonl"
    source.write_text(
        "\n".join(
            json.dumps({"image": c.image, "lang": c.lang, "text": c.text, "source": c.source}, ensure_ascii=False)
            for c in CAPTIONS
        ),
        encoding="utf-8",
    )
    split = tmp_path / "split.txt"
    split.write_text("1.jpg\n")
    runner = CliRunner()
    added = runner.invoke(
        cli, ["index", "captions", "add", str(source), "--lang", "en,fr", "--images", str(split), "-q"]
    )
    assert added.exit_code == 0, added.output
    assert "added 2" in added.output
    again = runner.invoke(cli, ["index", "captions", "add", str(source), "-q"])
    assert "added 4, already indexed 2" in again.output
    stats = json.loads(runner.invoke(cli, ["index", "captions", "stats"]).stdout)
    assert stats["languages"] == {"de": 1, "en": 3, "fr": 2}
    assert (tmp_path / "home" / "index" / "captions" / "en.faiss").exists()
    listed = runner.invoke(cli, ["index", "captions", "list", "--lang", "fr"]).stdout.splitlines()
    assert [json.loads(line)["text"] for line in listed] == [c.text for c in CAPTIONS if c.lang == "fr"]
    removed = runner.invoke(cli, ["index", "captions", "remove", "--lang", "de"])
    assert removed.exit_code == 0 and "removed 1" in removed.output
    assert runner.invoke(cli, ["index", "captions", "remove"]).exit_code == 2
    missing = runner.invoke(cli, ["index", "captions", "add", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "cannot read" in " ".join(missing.output.split())  # rich wraps lines


@pytest.mark.postgres
def test_captions_in_postgresql_through_the_cli_and_the_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str, pg_schema: str, photo_paths: list[Path]
) -> None:
    """POLYGLOT_CAPTIONS_DATABASE_URL puts the caption rows in PostgreSQL: `polyglot index captions add` writes
    them there, and the service answers /captions from the same table."""
    from api_fixtures import fake_engine_factory
    from fastapi.testclient import TestClient

    import app.cli.captions_cmd as captions_cmd
    from app.main import create_app
    from app.service_settings import ServiceSettings

    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)
    url = f"{postgres_url}?options=-csearch_path%3D{pg_schema}"
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_CAPTIONS_DATABASE_URL", url)
    monkeypatch.setattr(captions_cmd, "load_embedder", lambda settings: fake_text_embedder())
    source = tmp_path / "captions.jsonl"
    source.write_text(
        "\n".join(json.dumps(dataclasses.asdict(c), ensure_ascii=False) for c in CAPTIONS), encoding="utf-8"
    )
    added = CliRunner().invoke(cli, ["index", "captions", "add", str(source), "-q"])
    assert added.exit_code == 0 and "added 6" in added.output, added.output
    assert not (tmp_path / "home" / "index" / "captions" / "captions.sqlite").exists()  # the rows are in PostgreSQL
    settings = ServiceSettings(home=tmp_path / "home", image_encoder="fake-grid", captions_database_url=url)
    with TestClient(create_app(settings, fake_engine_factory(photo_paths))) as client:
        answer = client.post("/captions", data={"image_id": "1"}, params={"lang": ["fr"], "k": 2})
        assert answer.status_code == 200, answer.text
        texts = {c["text"] for c in answer.json()["captions"]["fr"]}
        assert texts == {c.text for c in CAPTIONS if c.lang == "fr"}
