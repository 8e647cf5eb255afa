"""The service as deployed: the real engine (the shipped student, the bundled image encoder) behind HTTP, on a
tiny index."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from conftest import clear_polyglot_env
from fastapi.testclient import TestClient
from PIL import Image
from threadpoolctl import threadpool_info

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.asset_paths import shipped_tower_path
from indexer.captions import Caption
from indexer.image_index import ImageIndex

pytestmark = pytest.mark.slow
REPO_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"


@pytest.mark.skipif(not (shipped_tower_path() / "config.json").exists(), reason="no shipped student")
def test_real_engine_searches_with_its_threads_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clear_polyglot_env(monkeypatch)
    settings = ServiceSettings(home=tmp_path / "home", models_dir=REPO_MODELS, query_cache_size=0)
    colours = {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 60, 220)}
    paths = []
    for name, rgb in colours.items():
        paths.append(tmp_path / f"{name}.png")
        Image.new("RGB", (96, 96), rgb).save(paths[-1])
    with ImageIndex.open(settings) as index:
        index.add_paths(paths, progress=False)

    with TestClient(create_app(settings)) as client:
        assert client.get("/ready").status_code == 200
        queries = [
            ("une image rouge", "fr"),
            ("एक लाल तस्वीर", "hi"),
            ("modrý obrázek", "cs"),
            ("ein grünes Bild", None),
        ]
        answers = [client.get("/v1/search", params={"q": q, **({"lang": lang} if lang else {})}) for q, lang in queries]
        for answer in answers:
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert [r["rank"] for r in body["results"]] == [1, 2, 3]
            assert {r["metadata"]["filename"] for r in body["results"]} == {p.name for p in paths}
            assert body["text_encoder"] == "e5-student"  # one model for every language, detected ones included
        assert answers[1].json()["language"]["used"] == "hi" and answers[1].json()["language"]["supported"] is True
        assert client.get("/health").json() == {"status": "ok", "text_encoder": "e5-student"}
        ready = client.get("/ready").json()
        assert ready["text_encoder"] == "e5-student" and ready["text_model"] == "e5-student:student"
        assert (ready["image_encoder"], ready["image_precision"]) == ("efficientnet-lite2", "int8")  # the CPU default
        languages = client.get("/languages").json()["text_languages"]
        assert languages == ready["text_languages"] and {"fr", "hi", "cs", "sw", "vi"} <= set(languages)
        assert len(languages) >= 90  # XLM-R's ~100 languages, which e5-small was pretrained on
        # Captions and caption → caption search read the same student.
        engine = client.app.state.engine  # type: ignore[attr-defined]
        assert engine.captions.embedder is engine.models.text
        engine.captions.add([Caption("en", "a red square", "red.png"), Caption("en", "a blue square", "blue.png")])
        found = client.get("/captions/search", params={"q": "un carré rouge", "lang": "fr", "target": "en", "k": 2})
        assert found.status_code == 200, found.text
        assert {c["text"] for c in found.json()["captions"]} == {"a red square", "a blue square"}
        assert not found.json()["space"].startswith("pcca")  # the shipped alignments read mUSE, not loaded here
        image_captions = client.post("/captions", data={"image_id": "1"}, params={"lang": "en", "k": 2})
        assert image_captions.status_code == 200 and len(image_captions.json()["captions"]["en"]) == 2
        # Search runs on its own thread, and no BLAS pool spins beside it (one thread each, as configured).
        assert "search-batch-0" in {thread.name for thread in threading.enumerate()}
        blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
        assert blas and set(blas) == {settings.service.inference_threads}


@pytest.mark.skipif(not (shipped_tower_path() / "config.json").exists(), reason="no shipped student")
def test_evaluate_measures_the_shipped_student(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``polyglot evaluate`` with no options: the served student answers every language, and the JSON says so."""
    from typer.testing import CliRunner

    from app.cli import cli
    from training.data.synthetic import make_dataset

    clear_polyglot_env(monkeypatch)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_MODELS_DIR", str(REPO_MODELS))
    data = make_dataset(tmp_path / "data")
    out = tmp_path / "served.json"
    result = CliRunner().invoke(cli, ["evaluate", "--data", str(data), "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert {block["route"] for block in report["languages"].values()} == {"e5-student:student"}
    served = report["served"]
    # The shipped student carries its int8 calibration: the default precision ("auto") serves the smoothed int8 graph.
    assert served["text_encoder"] == "e5-student" and served["bridge"] is False and served["precision"] == "int8"
    assert Path(served["tower_path"]) == shipped_tower_path()
