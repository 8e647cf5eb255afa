"""Issue 59: a text search answers the photos that stand out by default (cutoff=auto), every photo with
cutoff=off, and POLYGLOT_SEARCH_CUTOFF=off makes every photo the default."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_fixtures import fake_engine_factory, service_settings  # noqa: F401
from conftest import write_random_images
from fastapi.testclient import TestClient

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.query.pipeline import DEFAULT_Z, cutoff_count

QUERY: dict[str, str | int] = {"q": "a dog runs on the beach", "lang": "en", "k": 60}


def _client(settings: ServiceSettings, photos: list[Path]) -> TestClient:
    return TestClient(create_app(settings, fake_engine_factory(photos)), raise_server_exceptions=False)


@pytest.fixture
def photos(tmp_path: Path) -> list[Path]:
    return write_random_images(tmp_path / "photos", 60, seed=7, size=(32, 24))


@pytest.fixture
def default_client(service_settings: ServiceSettings, photos: list[Path]) -> Iterator[TestClient]:  # noqa: F811
    settings = service_settings.model_copy(
        update={"service": service_settings.service.model_copy(update={"search_cutoff": "auto"})}
    )
    with _client(settings, photos) as client:
        yield client


def test_a_text_search_answers_what_stands_out_unless_cutoff_off(default_client: TestClient) -> None:
    everything = default_client.get("/v1/search", params={**QUERY, "cutoff": "off"}).json()
    assert everything["cutoff"] is None and len(everything["results"]) == 60
    scores = [r["score"] for r in everything["results"]]
    default = default_client.get("/v1/search", params=QUERY).json()
    assert default["cutoff"] == DEFAULT_Z
    kept = cutoff_count(scores, DEFAULT_Z)
    assert 1 <= kept < 60  # random photos: a few stand out, most do not
    assert [r["id"] for r in default["results"]] == [r["id"] for r in everything["results"][:kept]]
    auto = default_client.get("/v1/search", params={**QUERY, "cutoff": "auto"}).json()
    assert [r["id"] for r in auto["results"]] == [r["id"] for r in default["results"]]
    looser = default_client.get("/v1/search", params={**QUERY, "cutoff_z": 0.5}).json()
    assert len(looser["results"]) == cutoff_count(scores, 0.5) >= kept
    bad = default_client.get("/v1/search", params={**QUERY, "cutoff": "sometimes"})
    assert bad.status_code == 422


def test_the_setting_makes_every_result_the_default(
    service_settings: ServiceSettings,  # noqa: F811
    photos: list[Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("POLYGLOT_SEARCH_CUTOFF", "off")
    assert ServiceSettings().service.search_cutoff == "off"
    monkeypatch.setenv("POLYGLOT_SEARCH_CUTOFF", "auto")
    assert ServiceSettings().service.search_cutoff == "auto"
    with _client(service_settings, photos) as client:  # the shared fixture's setting: off
        answer = client.get("/v1/search", params=QUERY).json()
        assert answer["cutoff"] is None and len(answer["results"]) == 60
        assert client.get("/v1/search", params={**QUERY, "cutoff": "auto"}).json()["cutoff"] == DEFAULT_Z


def test_cutoff_keeps_the_best_and_reads_the_background_without_the_best() -> None:
    assert cutoff_count([0.9]) == 1 and cutoff_count([0.5] * 8) == 8  # nothing to tell apart: all
    assert cutoff_count([0.9, 0.1, 0.1, 0.1]) == 4  # a handful of photos: no distribution to stand out from
    background = [0.10 + 0.001 * (i % 7) for i in range(98)]
    # Two strong matches: left out of the background, both stand out.
    assert cutoff_count([0.60, 0.58, *background]) == 2
    # The same with the best candidates in the background: their spread hides the second one less well.
    assert cutoff_count([0.60, 0.58, *background], skip=0) == 2
    assert cutoff_count([0.11, *background]) == 1  # nothing stands out: the best is still shown
