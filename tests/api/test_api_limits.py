"""POLYGLOT_MAX_K and POLYGLOT_MAX_OFFSET bound every page of /search and /search/image."""

from __future__ import annotations

from pathlib import Path

from api_fixtures import CAPTIONS, fake_engine_factory
from fastapi.testclient import TestClient

from app.main import create_app
from app.service_settings import ServiceSettings

pytest_plugins = ("api_fixtures",)


def test_configured_page_limits_are_enforced(service_settings: ServiceSettings, photo_paths: list[Path]) -> None:
    settings = service_settings.model_copy(update={"max_k": 3, "max_offset": 4})
    with TestClient(create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
        ok = client.get("/search", params={"q": "a dog", "lang": "en", "k": 3, "offset": 3})
        assert ok.status_code == 200 and len(ok.json()["results"]) == 3
        assert ok.json()["next_offset"] is None  # 6 would pass the deepest allowed offset
        too_many = client.get("/search", params={"q": "a dog", "lang": "en", "k": 4})
        assert too_many.status_code == 422 and "POLYGLOT_MAX_K" in too_many.json()["detail"]
        too_deep = client.get("/search", params={"q": "a dog", "lang": "en", "offset": 5, "k": 2})
        assert too_deep.status_code == 422 and "at most 4" in too_deep.json()["detail"]
        by_image = client.post("/search/image", data={"image_id": "1"}, params={"k": 4})
        assert by_image.status_code == 422 and "POLYGLOT_MAX_K" in by_image.json()["detail"]
        page = client.post("/search/image", data={"image_id": "1"}, params={"k": 2, "offset": 2})
        assert page.status_code == 200 and [r["rank"] for r in page.json()["results"]] == [3, 4]
    with TestClient(create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
        assert client.get("/search", params={"q": "a dog", "lang": "en", "k": 100}).status_code == 200
        assert client.get("/search", params={"q": "a dog", "lang": "en", "k": 101}).status_code == 422
