"""Issue 60, finding 1: metadata over the bounds the answers declare (``indexer.metadata_limits``, used by
``app/schemas/images.py``) is refused on the way in, never stored. An admin upload with 1,001 tags was stored and
answered 500, and from then on ``/images/{id}/info``, the ``/images`` page holding it and ``/search/image``
answered 500 too; a manifest row of ``index add`` with 1,500 tags or a 20,000-character caption did the same."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import API_KEY, fake_engine_factory
from conftest import write_random_images
from fastapi.testclient import TestClient
from PIL import Image
from pydantic import SecretStr
from test_index_cli import cli_env, invoke  # noqa: F401  (cli_env: the CLI on the fake CNN)

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.metadata_limits import MAX_CAPTION_CHARS, MAX_TAGS, MAX_TITLE_CHARS

pytest_plugins = ("api_fixtures",)
ADMIN = {"X-API-Key": API_KEY}


def jpeg(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG")
    return buffer.getvalue()


def assert_every_answer_holds_the_index(client: TestClient) -> None:
    ids = [photo["id"] for photo in client.get("/v1/images", params={"limit": 500}).json()]
    for path in ("/v1/images", "/v1/library", "/v1/search?q=dog"):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.text[:300])
    for image_id in ids:
        assert client.get(f"/v1/images/{image_id}/info").status_code == 200
        found = client.post("/v1/search/image", data={"image_id": str(image_id), "k": "50"})
        assert found.status_code == 200, found.text[:300]


def test_an_upload_over_the_bounds_is_422_and_nothing_is_stored(client: TestClient) -> None:
    index = client.app.state.engine.images  # type: ignore[attr-defined]
    before = index.store.count()
    tags = ",".join(f"t{i}" for i in range(MAX_TAGS + 1))  # 1,001 tags in under 5,000 characters
    answer = client.post("/v1/images", files={"file": ("a.jpg", jpeg(1))}, data={"tags": tags}, headers=ADMIN)
    assert answer.status_code == 422, answer.text[:300]
    assert "1,001 tags" in answer.json()["detail"] and f"{MAX_TAGS:,}" in answer.json()["detail"]
    assert index.store.count() == before and len(index) == before
    # At the bound: stored, and every answer that holds it still answers.
    at_bound = ",".join(f"t{i}" for i in range(MAX_TAGS))
    answer = client.post("/v1/images", files={"file": ("a.jpg", jpeg(1))}, data={"tags": at_bound}, headers=ADMIN)
    assert answer.status_code == 201, answer.text[:300]
    assert len(answer.json()["metadata"]["tags"]) == MAX_TAGS
    assert_every_answer_holds_the_index(client)


@pytest.mark.usefixtures("cli_env")
def test_manifest_rows_over_the_bounds_are_left_out_and_the_others_indexed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLYGLOT_IMAGE_ENCODER", "fake-grid")  # the name of the fake text side's image encoder
    photos = write_random_images(tmp_path / "photos", 4)
    rows = [
        {"path": photos[0].name, "tags": [f"t{i}" for i in range(1_500)]},
        {"path": photos[1].name, "caption": "x" * 20_000},
        {"path": photos[2].name, "title": "y" * (MAX_TITLE_CHARS + 1)},
        {"path": photos[3].name, "title": "kept", "caption": "c" * MAX_CAPTION_CHARS, "tags": ["dog"] * MAX_TAGS},
    ]
    manifest = tmp_path / "photos" / "rows.jsonl"
    manifest.write_text("".join(json.dumps(row) + "\n" for row in rows))
    code, output = invoke("add", str(manifest), "--quiet")
    assert code == 0, output
    assert "added 1, unchanged 0, failed 3" in output, output
    assert "line 1 of rows.jsonl left out: 1,500 tags" in output, output
    assert "line 2 of rows.jsonl left out: the caption has 20,000 characters" in output, output
    assert "line 3 of rows.jsonl left out: the title has 10,001 characters" in output, output
    # The index serves: every answer that holds the photo (the one kept, at the bounds) answers 200.
    settings = ServiceSettings(api_key=SecretStr(API_KEY))
    with TestClient(create_app(settings, fake_engine_factory()), raise_server_exceptions=False) as client:
        listed = client.get("/v1/images").json()
        assert [photo["metadata"]["title"] for photo in listed] == ["kept"]
        assert_every_answer_holds_the_index(client)


def test_a_server_path_with_metadata_over_the_bounds_is_422(client: TestClient, photo_paths: list[Path]) -> None:
    new = write_random_images(photo_paths[0].parent / "more", 1, seed=9)[0]
    index = client.app.state.engine.images  # type: ignore[attr-defined]
    before = index.store.count()
    tags = ",".join(["t"] * (MAX_TAGS + 5))
    answer = client.post("/v1/images", data={"path": str(new), "tags": tags}, headers=ADMIN)
    assert answer.status_code == 422 and "1,005 tags" in answer.json()["detail"], answer.text[:300]
    assert index.store.count() == len(index) == before and not index.store.by_paths([str(new)])


def test_rows_over_the_bounds_are_never_written_whoever_adds_them(client: TestClient, tmp_path: Path) -> None:
    """The index's own check (what the folder watcher, ``serve --images`` and every other caller of ``add_paths``
    go through): the file is reported failed with the reason, the others are added."""
    index = client.app.state.engine.images  # type: ignore[attr-defined]
    before = index.store.count()
    bad, good = write_random_images(tmp_path / "batch", 2, seed=11)
    report = index.add_paths([bad, good], {bad: {"tags": ["x"] * 1_500}, good: {"tags": ["x"]}}, progress=False)
    assert report.added == 1 and report.failed == [(str(bad), "1,500 tags; at most 1,000 are allowed per image")]
    assert index.store.count() == len(index) == before + 1
