"""End to end on real cluster software: `polyglot index add --engine ray` on a local Ray cluster (same vectors as
the single-machine path, resume after a killed run), and /search served from the Milvus server process.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeImageEncoder, write_random_images
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from app.cli import cli
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.distributed.shards import ShardPlan
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.indexer_settings import IndexerSettings

pytest_plugins = ("api_fixtures", "cluster_fixtures")  # api_fixtures imported where needed: see test_api.py
runner = CliRunner()


def named_fake(settings: IndexerSettings) -> FakeImageEncoder:
    """conftest's fake CNN under the configured name; Ray workers import conftest (PYTHONPATH) to unpickle it."""
    encoder = FakeImageEncoder(0)
    encoder.name = settings.image_encoder
    return encoder


@pytest.fixture
def cli_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for key in ("POLYGLOT_DATABASE_URL", "POLYGLOT_INDEX_DIR", "POLYGLOT_CACHE_DIR", "POLYGLOT_INDEX_BACKEND"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "var"))
    monkeypatch.setenv("POLYGLOT_TOWER_PATH", str(tmp_path / "no-tower"))  # plain l2 space
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "efficientnet-lite0")
    monkeypatch.setenv("POLYGLOT_BATCH_SIZE", "4")
    monkeypatch.setattr("indexer.image_index.image_encoder_from_settings", named_fake)
    return tmp_path


def add(monkeypatch: pytest.MonkeyPatch, root: Path, name: str, *options: str) -> tuple[int, str]:
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(root / name / "index"))
    monkeypatch.setenv("POLYGLOT_CACHE_DIR", str(root / name / "cache"))  # its own: no feature is shared
    result = runner.invoke(cli, ["index", "add", "photos", "--quiet", *options])
    return result.exit_code, result.output


def vectors_by_path(root: Path, name: str) -> dict[str, tuple[int, np.ndarray]]:
    settings = IndexerSettings(index_dir=root / name / "index", cache_dir=root / name / "cache")
    with ImageIndex.open(settings, encoder=named_fake(settings), image_space=ImageSpace("l2"), create=False) as index:
        return {r.path: (r.id, index.vector(r.id)) for r in index.list(limit=1000)}  # type: ignore[misc]


@pytest.mark.usefixtures("ray_cluster")
def test_ray_engine_resumes_and_gives_the_single_machine_vectors(
    cli_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_random_images(cli_env / "photos", 11, size=(24, 18))
    (cli_env / "photos" / "broken.jpg").write_bytes(b"not an image")
    code, output = add(monkeypatch, cli_env, "single")
    assert code == 0 and "added 11" in output and "failed 1" in output, output

    shards = cli_env / "shards"
    original = ShardPlan.write

    def write_then_die(self: ShardPlan, shard: int, content: object) -> None:
        original(self, shard, content)  # type: ignore[arg-type]
        raise KeyboardInterrupt  # the driver is stopped right after its first whole shard

    monkeypatch.setattr(ShardPlan, "write", write_then_die)
    options = ("--engine", "ray", "--workers", "2", "--shards", str(shards), "--shard-size", "4")
    code, output = add(monkeypatch, cli_env, "ray", *options)
    assert code == 130 and len(list(shards.glob("shard-*.npz"))) == 1, output
    monkeypatch.setattr(ShardPlan, "write", original)
    code, output = add(monkeypatch, cli_env, "ray", *options)
    assert code == 0, output
    assert "ray: embedded 8 photos in 2 shards, 1 resumed" in output and "added 11" in output, output
    assert "failed 1" in output and "broken.jpg" in output
    assert not shards.exists()  # the photos are indexed: the shards are not needed any more

    single, ray = vectors_by_path(cli_env, "single"), vectors_by_path(cli_env, "ray")
    assert sorted(single) == sorted(ray) and len(ray) == 11
    for path, (image_id, vector) in single.items():
        assert ray[path][0] == image_id  # same ids
        assert float(vector @ ray[path][1]) >= 0.9999  # unit vectors: the cosine


def test_search_through_milvus_equals_faiss(
    service_settings: ServiceSettings,
    photo_paths: list[Path],
    milvus_uri: str,
) -> None:
    from api_fixtures import API_KEY, CAPTIONS, fake_engine_factory

    milvus = service_settings.vector_index.model_copy(
        update={"backend": "milvus", "milvus_uri": milvus_uri, "milvus_collection": f"api{uuid.uuid4().hex[:8]}"}
    )
    answers = {}
    for name, vector_index in (("faiss", service_settings.vector_index), ("milvus", milvus)):
        settings = service_settings.model_copy(
            update={"vector_index": vector_index, "index_dir": service_settings.home / name}
        )
        app = create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))
        with TestClient(app, raise_server_exceptions=False) as client:
            pages = [client.get("/v1/search", params={"q": q, "k": 5}).json() for q in ("a dog", "deux enfants")]
            removed = pages[0]["results"][0]["id"]
            deleted = client.delete(f"/v1/images/{removed}", headers={"X-API-Key": API_KEY})
            assert deleted.status_code == 200, deleted.text
            after = client.get("/v1/search", params={"q": "a dog", "k": 8}).json()
            assert removed not in [r["id"] for r in after["results"]] and after["total_images"] == 7
            answers[name] = [[(r["id"], round(r["score"], 4)) for r in page["results"]] for page in pages]
    assert answers["milvus"] == answers["faiss"] and len(answers["faiss"][0]) == 5
