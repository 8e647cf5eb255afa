"""One text side behind /search for every language: no fast tower, no lanes, no glosses; removed settings warn."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import CAPTIONS, FakeTextEncoder, fake_engine_factory
from fastapi.testclient import TestClient

import indexer.settings as indexer_settings
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.query import QueryCache
from indexer.settings import REMOVED_SETTINGS, removed_settings, warn_removed_settings
from training.bridge import LanguageBridge

pytest_plugins = ("api_fixtures",)


@pytest.fixture
def served(service_settings: ServiceSettings, photo_paths: list[Path]) -> Iterator[TestClient]:
    app = create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def _search(client: TestClient, **params: str) -> dict:
    response = client.get("/search", params={"q": "un chien sur la plage", "k": "8", **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_every_language_and_undetected_queries_take_the_one_encoder(served: TestClient) -> None:
    answers = [_search(served, lang="fr"), _search(served, lang="en"), _search(served)]
    assert {answer["text_encoder"] for answer in answers} == {FakeTextEncoder.name}
    assert "gloss" not in answers[0]["language"]
    # No bridge on the fake side: the language does not change the vector, so not the ranking either.
    assert [(r["id"], r["score"]) for r in answers[0]["results"]] == [
        (r["id"], r["score"]) for r in answers[1]["results"]
    ]
    ready = served.get("/ready").json()
    assert ready["text_encoder"] == FakeTextEncoder.name and ready["text_model"] == FakeTextEncoder.name
    assert ready["text_languages"] == sorted(FakeTextEncoder.languages)
    assert "fast_text_encoder" not in ready and "gloss_languages" not in ready
    assert served.get("/languages").json()["text_languages"] == sorted(FakeTextEncoder.languages)


def test_a_language_the_encoder_does_not_declare_is_refused(served: TestClient) -> None:
    response = served.get("/search", params={"q": "pes", "lang": "cs"})
    assert response.status_code == 422
    assert "unsupported lang" in response.json()["detail"] and FakeTextEncoder.name in response.json()["detail"]


def test_one_batcher_serves_every_language(served: TestClient) -> None:
    engine = served.app.state.engine  # type: ignore[attr-defined]
    assert engine.text_batcher is not None and not hasattr(engine, "text_batchers")
    before = engine.text_batcher.items
    for lang in ("en", "fr", "de"):
        _search(served, lang=lang)
    assert engine.text_batcher.items == before + 3


def test_a_batch_mixing_languages_answers_each_query_as_alone(served: TestClient) -> None:
    engine = served.app.state.engine  # type: ignore[attr-defined]
    items = [("un chien", "fr", 3), ("a dog", "en", 5), ("la plage", None, 2)]
    together = engine.pipeline.search_texts(engine.images, items)
    alone = [engine.pipeline.search_texts(engine.images, [item])[0] for item in items]
    assert [[h.id for h in hits] for hits in together] == [[h.id for h in hits] for hits in alone]
    assert [len(hits) for hits in together] == [3, 5, 2]


def test_queries_go_through_a_research_towers_language_bridge_and_are_cached_per_language(served: TestClient) -> None:
    text = served.app.state.engine.models.text  # type: ignore[attr-defined]
    weight = np.random.default_rng(0).standard_normal((9, 8)).astype(np.float32)
    text.bridge = LanguageBridge(weight, (8, 16), (0, 8), frozenset({"es"}), FakeTextEncoder.name)
    query = {"q": "un perro en la playa", "k": "8"}
    spanish = served.get("/search", params={**query, "lang": "es"}).json()
    english = served.get("/search", params={**query, "lang": "en"}).json()
    assert spanish["text_encoder"] == english["text_encoder"] == FakeTextEncoder.name
    assert [r["score"] for r in spanish["results"]] != [r["score"] for r in english["results"]]
    pipeline = served.app.state.engine.pipeline  # type: ignore[attr-defined]
    pipeline.cache = QueryCache(16)
    spanish_vector = pipeline.embed_queries(["un perro"], "es")
    np.testing.assert_allclose(spanish_vector, text.embed(["un perro"], "es"), atol=1e-6)
    english_vector = pipeline.embed_queries(["un perro"], "en")  # same text, another language: its own entry
    assert not np.allclose(spanish_vector, english_vector) and len(pipeline.cache) == 2
    np.testing.assert_allclose(pipeline.embed_queries(["un perro"], ["es"]), spanish_vector)
    assert pipeline.embed_queries([], None).shape == (0, text.dim)


def test_removed_settings_are_named_once_at_start_up_and_change_nothing(
    service_settings: ServiceSettings,
    photo_paths: list[Path],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(indexer_settings, "_warned", set())
    monkeypatch.setenv("POLYGLOT_FAST_TOWER", "off")
    monkeypatch.setenv("POLYGLOT_LEXICONS_DIR", str(tmp_path / "no-such-folder"))
    settings = ServiceSettings(**service_settings.model_dump())  # read with them set: ignored, not an error
    assert not hasattr(settings, "fast_tower") and not hasattr(settings, "lexicons_dir")
    with caplog.at_level(logging.WARNING, logger="indexer.settings"):
        with TestClient(create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
            assert _search(client, lang="fr")["text_encoder"] == FakeTextEncoder.name
        with TestClient(create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
            assert client.get("/ready").status_code == 200
    warnings = [record for record in caplog.records if record.name == "indexer.settings"]
    assert len(warnings) == 1  # once per process, however often the models are loaded
    message = warnings[0].getMessage()
    assert (
        "POLYGLOT_FAST_TOWER," in message
        and "POLYGLOT_LEXICONS_DIR" in message
        and "no longer have an effect" in message
    )
    assert warnings[0].removed_settings == ["POLYGLOT_FAST_TOWER", "POLYGLOT_LEXICONS_DIR"]  # type: ignore[attr-defined]


def test_removed_settings_lists_only_what_is_set() -> None:
    assert removed_settings({"POLYGLOT_TOWER_PATH": "x", "POLYGLOT_CLC_LEXICONS_DIR": "y"}) == []
    assert removed_settings(dict.fromkeys(REMOVED_SETTINGS, "")) == list(REMOVED_SETTINGS)
    assert set(REMOVED_SETTINGS) == {
        "POLYGLOT_FAST_TOWER",
        "POLYGLOT_FAST_TOWER_LANGUAGES",
        "POLYGLOT_FAST_TOWER_USE",
        "POLYGLOT_FAST_TOWER_WEIGHT",
        "POLYGLOT_LEXICONS_DIR",
        "POLYGLOT_LEXICON_WEIGHT",
    }
    assert warn_removed_settings({"POLYGLOT_LEXICON_WEIGHT": "0.3"}, once=False) == ["POLYGLOT_LEXICON_WEIGHT"]
    assert warn_removed_settings({}, once=False) == []
