"""Two text towers behind /search: languages the fast encoder declares take it, the others keep the main one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import CAPTIONS, FakeTextEncoder, fake_engine_factory, fake_text_embedder
from fastapi.testclient import TestClient

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.bridge import LanguageBridge
from indexer.embedders import mix_towers, shipped_fast_tower_path, shipped_tower_path
from indexer.query.models import ModelsError, check_same_space

pytest_plugins = ("api_fixtures",)


class FastFakeEncoder(FakeTextEncoder):
    """Another bag-of-words encoder that covers only French and Portuguese (like mUSE and Czech)."""

    name = "fake-fast"
    dim = 8
    languages = frozenset({"fr", "pt"})


@pytest.fixture
def routed(service_settings: ServiceSettings, photo_paths: list[Path]) -> Iterator[TestClient]:
    fast = fake_text_embedder(FastFakeEncoder(), seed=1)
    app = create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS, fast_text=fast))
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def _search(client: TestClient, **params: str) -> dict:
    response = client.get("/search", params={"q": "un chien sur la plage", "k": "8", **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_languages_the_fast_encoder_covers_take_the_fast_tower(routed: TestClient) -> None:
    french = _search(routed, lang="fr")
    assert french["text_encoder"] == "fake-fast"
    english = _search(routed, lang="en")  # same words, main encoder
    assert english["text_encoder"] == FakeTextEncoder.name
    # Different towers give different vectors, hence a different ranking or different scores.
    assert [(r["id"], r["score"]) for r in french["results"]] != [(r["id"], r["score"]) for r in english["results"]]
    assert routed.get("/ready").json()["fast_text_encoder"] == "fake-fast"


def test_a_language_only_the_fast_encoder_covers_is_accepted(routed: TestClient) -> None:
    assert _search(routed, lang="pt")["text_encoder"] == "fake-fast"
    response = routed.get("/search", params={"q": "pes", "lang": "cs"})
    assert response.status_code == 422  # neither encoder declares Czech
    assert "unsupported lang" in response.json()["detail"]


def test_same_text_in_two_routes_is_cached_apart(routed: TestClient) -> None:
    pipeline = routed.app.state.engine.pipeline  # type: ignore[attr-defined]
    pipeline.cache.size = 16
    french = pipeline.embed_queries(["chien"], "fr")  # the fast route
    english = pipeline.embed_queries(["chien"], "en")  # the main route
    assert not np.allclose(french, english)
    np.testing.assert_allclose(french, pipeline.embed_route("fast", ["chien"], ["fr"]), atol=1e-6)
    np.testing.assert_allclose(english, pipeline.embed_route("main", ["chien"], ["en"]), atol=1e-6)
    assert len(pipeline.cache) == 2
    np.testing.assert_allclose(pipeline.embed_queries(["chien"], "fr"), french)


def test_a_fast_tower_in_another_image_space_is_refused() -> None:
    main = fake_text_embedder()
    other = fake_text_embedder(FastFakeEncoder(), seed=1)
    check_same_space(main, other, "fast")  # same fake image encoder and space: fine
    other.tower.config["image_encoder"] = "efficientnet-lite0"
    with pytest.raises(ModelsError, match="--image-space-from"):
        check_same_space(main, other, "fast")


def test_fast_tower_setting(service_settings: ServiceSettings, tmp_path: Path) -> None:
    assert service_settings.resolved_fast_tower == shipped_fast_tower_path()  # main = shipped default
    assert service_settings.model_copy(update={"fast_tower": "off"}).resolved_fast_tower is None
    custom = service_settings.model_copy(update={"tower_path": tmp_path / "mine"})
    assert custom.resolved_fast_tower is None  # a custom main tower gets no shipped partner
    explicit = custom.model_copy(update={"fast_tower": str(tmp_path / "fast")})
    assert explicit.resolved_fast_tower == tmp_path / "fast"
    assert service_settings.model_copy(update={"tower_path": shipped_tower_path()}).resolved_fast_tower is not None


def test_a_batch_mixing_routes_answers_each_query_as_alone(routed: TestClient) -> None:
    engine = routed.app.state.engine  # type: ignore[attr-defined]
    items = [("un chien", "fr", 3), ("a dog", "en", 5), ("la plage", "fr", 2)]
    together = engine.pipeline.search_texts(engine.images, items)
    alone = [engine.pipeline.search_texts(engine.images, [item])[0] for item in items]
    assert [[h.id for h in hits] for hits in together] == [[h.id for h in hits] for hits in alone]
    assert [len(hits) for hits in together] == [3, 5, 2]


def test_mix_towers_is_the_unit_weighted_mean() -> None:
    a, b = np.array([[1.0, 0.0]], np.float32), np.array([[0.0, 1.0]], np.float32)
    np.testing.assert_allclose(mix_towers(a, b, 0.5), [[0.5**0.5, 0.5**0.5]], atol=1e-6)
    np.testing.assert_allclose(mix_towers(a, b, 0.0), a)
    np.testing.assert_allclose(mix_towers(a, b, 0.25), [[0.75 / 0.625**0.5, 0.25 / 0.625**0.5]], atol=1e-6)


def test_ensemble_mode_averages_both_towers(service_settings: ServiceSettings, photo_paths: list[Path]) -> None:
    settings = service_settings.model_copy(update={"fast_tower_use": "ensemble", "fast_tower_weight": 0.3})
    fast = fake_text_embedder(FastFakeEncoder(), seed=1)
    app = create_app(settings, fake_engine_factory(photo_paths, CAPTIONS, fast_text=fast))
    with TestClient(app, raise_server_exceptions=False) as client:
        answer = _search(client, lang="fr")
        assert answer["text_encoder"] == "fake-text & fake-fast"
        assert _search(client, lang="en")["text_encoder"] == "fake-text"  # the fast encoder lacks English
        pipeline = client.app.state.engine.pipeline  # type: ignore[attr-defined]
        expected = mix_towers(pipeline.models.text.embed(["chien"], "fr"), fast.embed(["chien"], "fr"), 0.3)
        np.testing.assert_allclose(pipeline.embed_queries(["chien"], "fr"), expected, atol=1e-6)


def test_queries_go_through_the_main_towers_language_bridge(routed: TestClient) -> None:
    text = routed.app.state.engine.models.text  # type: ignore[attr-defined]
    weight = np.random.default_rng(0).standard_normal((9, 8)).astype(np.float32)
    text.bridge = LanguageBridge(weight, (8, 16), (0, 8), frozenset({"es"}), FakeTextEncoder.name)
    query = {"q": "un perro en la playa", "k": "8"}
    spanish = routed.get("/search", params={**query, "lang": "es"}).json()
    english = routed.get("/search", params={**query, "lang": "en"}).json()
    assert spanish["text_encoder"] == english["text_encoder"] == FakeTextEncoder.name
    assert [r["score"] for r in spanish["results"]] != [r["score"] for r in english["results"]]
    pipeline = routed.app.state.engine.pipeline  # type: ignore[attr-defined]
    np.testing.assert_allclose(pipeline.embed_queries(["un perro"], "es"), text.embed(["un perro"], "es"), atol=1e-6)


def test_queries_with_a_dictionary_are_scored_with_their_english_gloss(
    service_settings: ServiceSettings, photo_paths: list[Path], tmp_path: Path
) -> None:
    lexicons = tmp_path / "lexicons"
    lexicons.mkdir()
    (lexicons / "en-de.tsv").write_text("beach\tstrand\ndog\thund\n", encoding="utf-8")
    (lexicons / "en-cs.tsv").write_text("dog\tpes\n", encoding="utf-8")  # the fake encoder has no Czech
    settings = service_settings.model_copy(update={"lexicons_dir": lexicons, "lexicon_weight": 0.4})
    with TestClient(create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
        assert client.get("/ready").json()["gloss_languages"] == ["de"]
        answer = client.get("/search", params={"q": "Hund am Strand", "lang": "de", "k": "8"}).json()
        assert answer["language"]["gloss"] == "dog am beach"
        engine = client.app.state.engine  # type: ignore[attr-defined]
        direct = engine.models.text.embed(["Hund am Strand"], "de")
        expected = mix_towers(direct, engine.models.text.embed(["dog am beach"], "en"), 0.4)
        np.testing.assert_allclose(engine.pipeline.embed_queries(["Hund am Strand"], "de"), expected, atol=1e-6)
        scores = [r["score"] for r in answer["results"]]
        best = engine.images.search(expected, 8)[0]
        np.testing.assert_allclose(scores, [h.score for h in best], atol=1e-5)
        english = client.get("/search", params={"q": "a dog", "lang": "en"}).json()
        assert english["language"]["gloss"] is None
    with TestClient(create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
        assert client.get("/ready").json()["gloss_languages"] == []
        plain = client.get("/search", params={"q": "Hund am Strand", "lang": "de"}).json()
        assert plain["language"]["gloss"] is None


def test_fast_tower_languages_narrow_the_fast_route(service_settings: ServiceSettings, photo_paths: list[Path]) -> None:
    settings = service_settings.model_copy(update={"fast_tower_languages": ["pt"]})
    fast = fake_text_embedder(FastFakeEncoder(), seed=1)
    with TestClient(create_app(settings, fake_engine_factory(photo_paths, CAPTIONS, fast_text=fast))) as client:
        assert _search(client, lang="pt")["text_encoder"] == "fake-fast"
        assert _search(client, lang="fr")["text_encoder"] == FakeTextEncoder.name  # covered, but not chosen
        pipeline = client.app.state.engine.pipeline  # type: ignore[attr-defined]
        assert pipeline.route_label("fr").startswith("main:") and pipeline.route_label("pt") == "fast:fake-fast"


class GatedEncoder(FakeTextEncoder):
    """The main encoder, held on a gate while it embeds a query containing "slow"."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.gate = threading.Event(), threading.Event()

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        if any("slow" in text for text in texts):
            self.entered.set()
            self.gate.wait(10)
        return super()._predict(texts)


def test_a_slow_main_tower_query_does_not_hold_up_fast_tower_queries(
    service_settings: ServiceSettings, photo_paths: list[Path]
) -> None:
    main = GatedEncoder()
    factory = fake_engine_factory(
        photo_paths, CAPTIONS, fast_text=fake_text_embedder(FastFakeEncoder(), seed=1), text=fake_text_embedder(main)
    )
    with TestClient(create_app(service_settings, factory)) as client, ThreadPoolExecutor(1) as pool:
        slow = pool.submit(client.get, "/search", params={"q": "a slow dog", "lang": "en"})
        assert main.entered.wait(5)
        start = time.perf_counter()
        french = client.get("/search", params={"q": "un chien", "lang": "fr"})  # answered while the main lane waits
        assert french.status_code == 200 and time.perf_counter() - start < 5
        assert not main.gate.is_set()
        main.gate.set()
        assert slow.result(10).status_code == 200
