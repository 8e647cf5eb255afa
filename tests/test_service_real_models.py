"""The service as deployed: the real engine (the shipped student, the bundled image encoder) behind HTTP, on a
tiny index."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from PIL import Image
from threadpoolctl import threadpool_info

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.embedders import shipped_tower_path
from indexer.image_index import ImageIndex

pytestmark = pytest.mark.slow
REPO_MODELS = Path(__file__).resolve().parents[1] / "var" / "models"


@pytest.mark.skipif(not (shipped_tower_path() / "config.json").exists(), reason="no shipped student")
def test_real_engine_searches_with_its_threads_pinned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("POLYGLOT_"):
            monkeypatch.delenv(key)
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
        ready = client.get("/ready").json()
        assert ready["text_encoder"] == "e5-student" and ready["text_model"] == "e5-student:student"
        languages = client.get("/languages").json()["text_languages"]
        assert languages == ready["text_languages"] and {"fr", "hi", "cs", "sw", "vi"} <= set(languages)
        assert len(languages) >= 90  # XLM-R's ~100 languages, which e5-small was pretrained on
        # Search runs on its own thread, and no BLAS pool spins beside it (one thread each, as configured).
        assert "search-batch-0" in {thread.name for thread in threading.enumerate()}
        blas = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
        assert blas and set(blas) == {settings.inference_threads}
