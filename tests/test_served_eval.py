"""``polyglot evaluate`` measures what ``/search`` serves: the same query gives the same ranking through both."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import FakeTextEncoder, fake_text_embedder
from conftest import FakeImageEncoder
from fastapi.testclient import TestClient

from app.engine import Engine, assemble
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.image_index import ImageIndex
from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.store.vectors import VectorIndexSettings
from training.prepared import prepare_split
from training.served_eval import evaluate_served, ranks_from_top, served_ranking
from training.synthetic import make_dataset

pytest_plugins = ("api_fixtures",)


class FastFakeEncoder(FakeTextEncoder):
    """A second bag-of-words encoder covering French only: French queries take the fast route."""

    name = "fake-fast"
    dim = 8
    languages = frozenset({"fr"})


def test_ranks_from_top() -> None:
    top = np.array([[3, 1, 2], [0, 2, 1], [1, 2, 3]])
    assert ranks_from_top(top, np.array([1, 0, 0])).tolist() == [1, 0, 3]  # absent: the depth


@pytest.mark.parametrize("use", ["route", "ensemble"])
def test_evaluation_ranks_what_search_returns(service_settings: ServiceSettings, tmp_path: Path, use: str) -> None:
    data = make_dataset(tmp_path / "data")
    settings = service_settings.model_copy(update={"fast_tower_use": use, "search_batch_size": 1})
    models = load_models(
        settings,
        text=fake_text_embedder(),
        fast_text=fake_text_embedder(FastFakeEncoder(), seed=1),
        image_encoder=FakeImageEncoder(0),
    )
    split = prepare_split(data, "dev", None, models.image_encoder, None, tmp_path / "cache")
    pipeline = QueryPipeline(models, settings, QueryCache(0))
    ranking = served_ranking(pipeline, split, VectorIndexSettings())
    evaluation = evaluate_served(pipeline, split, VectorIndexSettings())
    routes = {lang: block["route"] for lang, block in evaluation.report["languages"].items()}
    fast = "fast:fake-fast" if use == "route" else "both:" + models.tower_names["main"] + "+fake-fast"
    assert routes == {
        "en": "main:" + models.tower_names["main"],
        "de": "main:" + models.tower_names["main"],
        "fr": fast,
    }

    def factory(service: ServiceSettings) -> Engine:
        index = ImageIndex.open(service, encoder=models.image_encoder, image_space=models.image_space)
        index.add_paths([data / "images" / name for name in split.images], progress=False)
        return assemble(service, QueryPipeline(models, service), index)

    with TestClient(create_app(settings, factory)) as client:
        checked = 0
        for row in range(0, len(split.caption_text), 5):  # every language, several templates
            text, lang = split.caption_text[row], str(split.caption_lang[row])
            answer = client.get("/search", params={"q": text, "lang": lang, "k": 10}).json()
            names = [result["metadata"]["filename"] for result in answer["results"]]
            assert [split.images.index(name) for name in names] == ranking.top[row].tolist(), (text, lang)
            checked += 1
        assert checked >= 10


def test_evaluate_cli_reports_the_served_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, service_settings: ServiceSettings
) -> None:
    """Through the CLI, on the fake models: every language of the JSON names its route."""
    from typer.testing import CliRunner

    import indexer.query.models as query_models
    from app.cli import cli

    data = make_dataset(tmp_path / "data")
    fast = fake_text_embedder(FastFakeEncoder(), seed=1)

    def fake(settings: object, **options: object) -> object:
        return load_models(
            settings,  # type: ignore[arg-type]
            text=fake_text_embedder(),
            fast_text=fast,
            image_encoder=FakeImageEncoder(0),
            glosses=bool(options.get("glosses", True)),
        )

    monkeypatch.setattr(query_models, "load_models", fake)
    monkeypatch.setattr("indexer.query.load_models", fake)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", FakeImageEncoder.name)
    out = tmp_path / "served.json"
    result = CliRunner().invoke(cli, ["evaluate", "--data", str(data), "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["languages"]["fr"]["route"] == "fast:fake-fast"
    assert report["languages"]["en"]["route"].startswith("main:")
    assert report["served"]["index_kind"] == "flat" and report["pool_images"] == 15
