"""Search through the concept lexicon: a query that is a concept's name has its English vector fused in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from api_fixtures import fake_text_embedder
from concept_fixtures import write_lexicon
from conftest import FakeImageEncoder

from app.service_settings import ServiceSettings
from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.settings import TaggingSettings
from training.data.synthetic import make_dataset

pytest_plugins = ("api_fixtures",)


def pipeline_with(settings: ServiceSettings, tmp_path: Path, weight: float) -> QueryPipeline:
    lexicon = write_lexicon(tmp_path / f"lexicon-{weight}")
    fused = settings.model_copy(
        update={"concept_fusion_weight": weight, "tagging": TaggingSettings(lexicon_dir=lexicon)}
    )
    fused = type(settings).model_validate(fused.model_dump())  # flat field into its section, as from the env
    models = load_models(fused, text=fake_text_embedder(), image_encoder=FakeImageEncoder(0))
    return QueryPipeline(models, fused, QueryCache(0))


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def test_a_concept_name_gets_its_english_vector(service_settings: ServiceSettings, tmp_path: Path) -> None:
    plain = pipeline_with(service_settings, tmp_path, 0.0)
    assert plain.models.fusion is None  # 0: off, nothing loaded
    fused = pipeline_with(service_settings, tmp_path, 1.0)
    assert fused.models.fusion is not None
    english = fused.models.text.embed(["dog, domestic dog"], "en")[0]
    for query in ("Chien", "  chien ", "CHIEN", "toutou!"):  # case, spaces, edge punctuation aside
        before = plain.embed_queries([query], "fr")[0]
        after = fused.embed_queries([query], "fr")[0]
        expected = unit(before + english / np.linalg.norm(english))
        assert np.allclose(after, expected, atol=1e-3), query  # concept vectors are cached as float16
    for query, lang in (("chat", "fr"), ("un chien noir", "fr"), ("chien", "de")):  # no name of a concept there
        assert np.allclose(fused.embed_queries([query], lang)[0], plain.embed_queries([query], lang)[0], atol=1e-6)
    # no language: "chien" is a name of one concept wherever it is one; "dog" too
    expected = unit(plain.embed_queries(["chien"], None)[0] + english / np.linalg.norm(english))
    assert np.allclose(fused.embed_queries(["chien"], None)[0], expected, atol=1e-3)
    cached = list((service_settings.resolved_cache_dir / "concept-vectors").rglob("*.npy"))
    assert len(cached) == 1  # the English concept vectors, embedded once, under the text side's fingerprint


@pytest.mark.parametrize("weight", [-0.5, 5.0])
def test_weight_out_of_range_is_refused(monkeypatch: pytest.MonkeyPatch, weight: float) -> None:
    from pydantic import ValidationError

    from indexer.settings import Settings

    monkeypatch.setenv("POLYGLOT_CONCEPT_FUSION_WEIGHT", str(weight))
    with pytest.raises(ValidationError, match="concept_fusion_weight"):
        Settings()


def test_search_answers_a_concept_name_with_the_fused_vector(service_settings: ServiceSettings, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from app.engine import Engine, assemble
    from app.main import create_app
    from indexer.image_index import ImageIndex

    data = make_dataset(tmp_path / "data")
    fused = pipeline_with(service_settings, tmp_path, 1.5)
    plain = pipeline_with(service_settings, tmp_path, 0.0)
    photos = sorted((data / "images").iterdir())
    settings = fused.settings

    def factory(service: ServiceSettings) -> Engine:
        index = ImageIndex.open(service, encoder=fused.models.image_encoder, image_space=fused.models.image_space)
        index.add_paths(photos, progress=False)
        return assemble(service, QueryPipeline(fused.models, service), index)

    with TestClient(create_app(settings, factory)) as client:  # type: ignore[arg-type]
        answer = client.get("/search", params={"q": "chien", "lang": "fr", "k": 5, "cutoff": "off"})
        assert answer.status_code == 200
        engine_images = client.app.state.engine.images  # type: ignore[attr-defined]
        served = [r["score"] for r in answer.json()["results"]]
    for pipeline, expect_equal in ((fused, True), (plain, False)):
        vector = pipeline.embed_queries(["chien"], "fr")
        best = [hit.score for hit in engine_images.search(vector, 5)[0]]
        assert np.allclose(best, served, atol=1e-4) is expect_equal
