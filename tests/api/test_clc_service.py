"""Cross-lingual consistency through the interfaces users touch: ``GET /search?clc=``, ``polyglot evaluate --clc``
and ``polyglot clc fit`` on tiny data and fake models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import fake_engine_factory
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from app.cli import cli
from app.main import create_app
from app.service_settings import ServiceSettings
from training.data.synthetic import make_dataset

pytest_plugins = ("api_fixtures",)


def write_lexicons(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "en-fr.tsv").write_text(
        "dog\tchien\nred\trouge\nbeach\tplage\nblue\tbleu\ngreen\tvert\npicture\timage\n", "utf-8"
    )
    (folder / "en-de.tsv").write_text("red\trot\nblue\tblau\ngreen\tgrün\npicture\tbild\n", "utf-8")
    return folder


def test_search_with_clc_average_ranks_by_the_mean_of_query_and_gloss(
    service_settings: ServiceSettings, photo_paths: list[Path], tmp_path: Path
) -> None:
    settings = service_settings.model_copy(
        update={"clc_translator": "gloss", "clc_lexicons_dir": write_lexicons(tmp_path / "lex"), "search_batch_size": 1}
    )
    with TestClient(create_app(settings, fake_engine_factory(photo_paths))) as client:
        engine = client.app.state.engine  # type: ignore[attr-defined]
        query = {"q": "un chien rouge sur la plage", "lang": "fr", "k": 8}
        plain = client.get("/search", params=query).json()
        both = client.get("/search", params={**query, "clc": "average"}).json()
        assert plain["clc"] is None and both["clc"] == "average"
        vectors = engine.pipeline.embed_queries([query["q"], "un dog red sur la beach"], ["fr", "en"])
        mean = vectors.mean(axis=0)
        hits = engine.images.search((mean / np.linalg.norm(mean))[None], 8)[0]
        assert [r["id"] for r in both["results"]] == [hit.id for hit in hits]
        assert [r["score"] for r in both["results"]] == pytest.approx([hit.score for hit in hits], abs=1e-5)
        assert [r["score"] for r in plain["results"]] != pytest.approx([hit.score for hit in hits], abs=1e-3)
        off = client.get("/search", params={**query, "clc": "off"}).json()
        assert [r["id"] for r in off["results"]] == [r["id"] for r in plain["results"]]


def test_search_clc_errors_are_clear_422s(service_settings: ServiceSettings, photo_paths: list[Path]) -> None:
    with TestClient(create_app(service_settings, fake_engine_factory(photo_paths))) as client:
        bad = client.get("/search", params={"q": "a dog", "clc": "sometimes"})
        assert bad.status_code == 422 and "average" in bad.text
        none = client.get("/search", params={"q": "a dog", "clc": "average"})
        assert none.status_code == 422 and "POLYGLOT_CLC_TRANSLATOR" in none.json()["detail"]
        assert client.get("/search", params={"q": "a dog"}).status_code == 200  # off by default


def parallel_dataset(root: Path) -> Path:
    """The synthetic set with its first caption per (photo, language) marked parallel (task 1)."""
    data = make_dataset(root)
    rows = [json.loads(line) for line in (data / "captions.jsonl").read_text("utf-8").splitlines()]
    seen: set[tuple[str, str]] = set()
    for row in rows:
        key = (row["image"], row["lang"])
        if key not in seen:
            row["source"] = "multi30k-task1"
            seen.add(key)
    (data / "captions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return data


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evaluate_on_fake_models: None) -> Path:
    monkeypatch.setenv("POLYGLOT_CLC_LANGUAGES", '["en","de","fr"]')
    return parallel_dataset(tmp_path / "data")


def test_evaluate_with_clc_average_and_the_gloss_translator(cli_env: Path, tmp_path: Path) -> None:
    lexicons = write_lexicons(tmp_path / "lex")
    base, clc = tmp_path / "base.json", tmp_path / "clc.json"
    runner = CliRunner()
    assert runner.invoke(cli, ["evaluate", "--data", str(cli_env), "--json", str(base)]).exit_code == 0
    args = [
        "evaluate",
        "--data",
        str(cli_env),
        "--clc",
        "average",
        "--translator",
        "gloss",
        "--lexicons",
        str(lexicons),
    ]
    result = runner.invoke(cli, [*args, "--json", str(clc)])
    assert result.exit_code == 0, result.output
    report, plain = json.loads(clc.read_text()), json.loads(base.read_text())
    assert report["served"]["clc"] == "average" and report["served"]["clc_translator"] == "gloss"
    assert not any(key.startswith(("gloss", "lexicon")) for key in report["served"])  # no served glosses any more
    assert report["languages"]["en"]["t2i"] == plain["languages"]["en"]["t2i"]  # English has no gloss
    translated = {lang: block["clc_translated"] for lang, block in report["languages"].items()}
    assert translated == {"en": 0.0, "de": 1.0, "fr": 1.0}  # every de/fr caption has an English gloss


def test_evaluate_clc_bad_options_exit_2(cli_env: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(cli, ["evaluate", "--data", str(cli_env), "--clc", "sometimes"])
    assert bad.exit_code == 2 and "unknown --clc" in bad.output
    none = runner.invoke(cli, ["evaluate", "--data", str(cli_env), "--clc", "average"])
    assert none.exit_code == 2 and "POLYGLOT_CLC_TRANSLATOR" in none.output
    noclf = runner.invoke(cli, ["evaluate", "--data", str(cli_env), "--clc", "classifier", "--translator", "parallel"])
    assert noclf.exit_code == 2 and "POLYGLOT_CLC_CLASSIFIER" in noclf.output
    nolex = runner.invoke(cli, ["evaluate", "--data", str(cli_env), "--clc", "average", "--translator", "gloss"])
    assert nolex.exit_code == 2 and "dictionaries" in nolex.output


def test_clc_fit_then_evaluate_the_classifier_with_parallel_translations(cli_env: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    model = tmp_path / "clc-parallel"
    fit = runner.invoke(
        cli, ["clc", "fit", "--data", str(cli_env), "--out", str(model), "--translator", "parallel", "--holdout", "20"]
    )
    assert fit.exit_code == 0, fit.output
    config = json.loads((model / "config.json").read_text())
    assert config["languages"] == ["en", "de", "fr"] and config["translator"] == "parallel"
    out = tmp_path / "clc-c.json"
    args = ["--clc", "classifier", "--translator", "parallel", "--clc-classifier", str(model), "--json", str(out)]
    result = runner.invoke(cli, ["evaluate", "--data", str(cli_env), *args])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["served"]["clc"] == "classifier" and report["served"]["clc_classifier"] == str(model)
    assert set(report["languages"]) == {"en", "de", "fr"}
    # Only the parallel (first) caption of each photo and language has translations: 1 of 2 English captions.
    assert report["languages"]["en"]["clc_translated"] == 0.5 and report["languages"]["fr"]["clc_translated"] == 1.0
    assert report["languages"]["fr"]["clc_translations_per_query"] == 2.0  # into en and de


def test_search_with_clc_classifier_reranks_through_the_image_index(
    service_settings: ServiceSettings, photo_paths: list[Path], tmp_path: Path
) -> None:
    """A classifier that trusts the query's own score alone must give back the plain ranking (all 8 photos are
    candidates); the scores shown are CLC-A's."""
    from training.clc.consistency import ClcClassifier

    w1 = np.zeros((32, 4), dtype=np.float32)
    w1[0, 0] = 1.0
    w2 = np.eye(1, 32, dtype=np.float32)
    ClcClassifier(["en", "de", "fr"], w1, np.ones(32, np.float32), w2, np.zeros(1, np.float32), {}).save(tmp_path / "c")
    settings = service_settings.model_copy(
        update={
            "clc_translator": "gloss",
            "clc_lexicons_dir": write_lexicons(tmp_path / "lex"),
            "clc_classifier": tmp_path / "c",
            "search_batch_size": 1,
        }
    )
    with TestClient(create_app(settings, fake_engine_factory(photo_paths))) as client:
        query = {"q": "un chien rouge sur la plage", "lang": "fr", "k": 8}
        plain = client.get("/search", params=query).json()
        ranked = client.get("/search", params={**query, "clc": "classifier"}).json()
        average = client.get("/search", params={**query, "clc": "average"}).json()
    assert ranked["clc"] == "classifier"
    assert [r["id"] for r in ranked["results"]] == [r["id"] for r in plain["results"]]
    shown = {r["id"]: r["score"] for r in ranked["results"]}
    assert shown == pytest.approx({r["id"]: r["score"] for r in average["results"]}, abs=1e-5)
