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
from training.data.prepared import prepare_split
from training.data.synthetic import make_dataset
from training.evaluation.served_eval import evaluate_served, ranks_from_top, served_ranking

pytest_plugins = ("api_fixtures",)


def test_ranks_from_top() -> None:
    top = np.array([[3, 1, 2], [0, 2, 1], [1, 2, 3]])
    assert ranks_from_top(top, np.array([1, 0, 0])).tolist() == [1, 0, 3]  # absent: the depth


@pytest.mark.parametrize("batch_size", [1, 32])
def test_evaluation_ranks_what_search_returns(
    service_settings: ServiceSettings, tmp_path: Path, batch_size: int
) -> None:
    data = make_dataset(tmp_path / "data")
    settings = service_settings.model_copy(update={"search_batch_size": batch_size})
    models = load_models(settings, text=fake_text_embedder(), image_encoder=FakeImageEncoder(0))
    split = prepare_split(data, "dev", None, models.image_encoder, None, tmp_path / "cache")
    pipeline = QueryPipeline(models, settings, QueryCache(0))
    ranking = served_ranking(pipeline, split, VectorIndexSettings())
    evaluation = evaluate_served(pipeline, split, VectorIndexSettings())
    routes = {lang: block["route"] for lang, block in evaluation.report["languages"].items()}
    assert routes == dict.fromkeys(("en", "de", "fr"), FakeTextEncoder.name)  # one model answers every language
    served = evaluation.report["served"]
    assert served["model"] == served["text_encoder"] == FakeTextEncoder.name and served["bridge"] is False
    assert not any(key.startswith(("fast_tower", "lexicon", "gloss")) for key in served)

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


def test_evaluate_cli_reports_the_served_model(
    tmp_path: Path, service_settings: ServiceSettings, evaluate_on_fake_models: None
) -> None:
    """Through the CLI, on the fake models: every language of the JSON names the one model that answered it,
    and the options of the removed features are gone."""
    from typer.testing import CliRunner

    from app.cli import cli

    data = make_dataset(tmp_path / "data")
    out = tmp_path / "served.json"
    result = CliRunner().invoke(cli, ["evaluate", "--data", str(data), "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert {block["route"] for block in report["languages"].values()} == {FakeTextEncoder.name}
    assert report["served"]["index_kind"] == "flat" and report["pool_images"] == 15
    for removed in (
        ["--ensemble-with", "x"],
        ["--ensemble-weight", "0.5"],
        ["--no-glosses"],
        ["--lexicon-weight", "1"],
    ):
        gone = CliRunner().invoke(cli, ["evaluate", "--data", str(data), *removed])
        assert gone.exit_code == 2 and removed[0] in gone.output, removed  # a usage error naming the option
    lexicons = CliRunner().invoke(cli, ["evaluate", "--data", str(data), "--lexicons", str(tmp_path)])
    assert lexicons.exit_code == 2 and "gloss translator" in " ".join(lexicons.output.split())
