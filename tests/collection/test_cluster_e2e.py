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
from test_index_cli import cli_env  # noqa: F401  (the CLI's environment; its fake CNN is what Ray workers unpickle)
from typer.testing import CliRunner

from app.cli import cli
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.distributed.shards import ShardPlan
from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.settings import Settings

pytest_plugins = ("api_fixtures", "cluster_fixtures")  # api_fixtures imported where needed: see test_api.py
runner = CliRunner()


def named_fake(settings: Settings) -> FakeImageEncoder:
    encoder = FakeImageEncoder(0)
    encoder.name = settings.models.image_encoder
    return encoder


def add(monkeypatch: pytest.MonkeyPatch, root: Path, name: str, *options: str) -> tuple[int, str]:
    monkeypatch.setenv("POLYGLOT_INDEX_DIR", str(root / name / "index"))
    monkeypatch.setenv("POLYGLOT_CACHE_DIR", str(root / name / "cache"))  # its own: no feature is shared
    result = runner.invoke(cli, ["index", "add", "photos", "--quiet", *options])
    return result.exit_code, result.output


def vectors_by_path(root: Path, name: str) -> dict[str, tuple[int, np.ndarray]]:
    settings = Settings(index_dir=root / name / "index", cache_dir=root / name / "cache")
    with ImageIndex.open(settings, encoder=named_fake(settings), image_space=ImageSpace("l2"), create=False) as index:
        return {r.path: (r.id, index.vector(r.id)) for r in index.list(limit=1000)}  # type: ignore[misc]


@pytest.mark.usefixtures("ray_cluster", "cli_env")
def test_ray_engine_resumes_and_gives_the_single_machine_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_random_images(tmp_path / "photos", 11, size=(24, 18))
    (tmp_path / "photos" / "broken.jpg").write_bytes(b"not an image")
    code, output = add(monkeypatch, tmp_path, "single")
    assert code == 0 and "added 11" in output and "failed 1" in output, output

    shards = tmp_path / "shards"
    original = ShardPlan.write

    def write_then_die(self: ShardPlan, shard: int, content: object) -> None:
        original(self, shard, content)  # type: ignore[arg-type]
        raise KeyboardInterrupt  # the driver is stopped right after its first whole shard

    monkeypatch.setattr(ShardPlan, "write", write_then_die)
    options = ("--engine", "ray", "--shards", str(shards), "--shard-size", "4")
    code, output = add(monkeypatch, tmp_path, "ray", *options, "--workers", "1")
    assert code == 130 and len(list(shards.glob("shard-*.npz"))) == 1, output
    monkeypatch.setattr(ShardPlan, "write", original)
    code, output = add(monkeypatch, tmp_path, "ray", *options, "--workers", "2")
    assert code == 0, output
    assert "ray: embedded 8 photos in 2 shards, 1 resumed" in output and "added 11" in output, output
    assert "failed 1" in output and "broken.jpg" in output
    assert not shards.exists()  # the photos are indexed: the shards are not needed any more

    single, ray = vectors_by_path(tmp_path, "single"), vectors_by_path(tmp_path, "ray")
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


@pytest.mark.usefixtures("cli_env")
def test_cluster_options_fail_with_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_random_images(tmp_path / "photos", 2, size=(8, 8))
    ShardPlan.open(tmp_path / "shards", ["/elsewhere/a.jpg"], "efficientnet-lite0", 4)  # another run's folder
    code, output = add(monkeypatch, tmp_path, "a", "--engine", "ray", "--shards", str(tmp_path / "shards"))
    # Whitespace normalised: the message names the temporary folder, whose length varies by machine.
    assert code == 2 and "holds shards of another run" in " ".join(output.split()), output
    assert "Traceback" not in output
    monkeypatch.setenv("POLYGLOT_INDEX_BACKEND", "milvus")
    monkeypatch.setenv("POLYGLOT_INDEX_MILVUS_URI", "http://127.0.0.1:9")  # nothing listens there
    code, output = add(monkeypatch, tmp_path, "b")
    assert code == 2 and "cannot reach Milvus at http://127.0.0.1:9" in " ".join(output.split()), output
