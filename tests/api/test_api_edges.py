"""The rough edges of issue 12, through HTTP: out-of-memory answers, strict ids, invisible queries, capped 422
echoes, and uploads orphaned by a kill -9."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FakeImageEncoder
from fastapi.testclient import TestClient
from PIL import Image

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.images import content_hash

pytest_plugins = ("api_fixtures",)  # imported in the functions that need more: see tests/api/test_api.py
TESTS_DIR = Path(__file__).resolve().parents[1]


def png(colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_out_of_memory_is_503_with_a_message_and_the_service_goes_on(
    client: TestClient, admin_headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from api_fixtures import FakeTextEncoder

    def exhausted(self: object, inputs: object) -> None:
        raise MemoryError

    with monkeypatch.context() as patch:
        patch.setattr(FakeImageEncoder, "_predict", exhausted)
        patch.setattr(FakeTextEncoder, "_predict", exhausted)
        answers = [client.get("/v1/search", params={"q": "a dog", "lang": "en"})]  # through the search threads
        for path, headers in (("/v1/search/image", {}), ("/v1/captions", {}), ("/v1/images", admin_headers)):
            answers.append(client.post(path, files={"file": ("a.png", png())}, headers=headers))
        for response in answers:
            assert response.status_code == 503, (response.url, response.text)
            assert "ran out of memory" in response.json()["detail"] and response.headers["Retry-After"] == "30"
    assert client.post("/v1/search/image", files={"file": ("a.png", png())}).status_code == 200
    assert client.get("/v1/search", params={"q": "a dog", "lang": "en"}).status_code == 200


BAD_IDS = ["%201", "1%20", "1.0", "+1", "01", "1_0", "1e0", "0x1", "%EF%BC%91"]  # the last: a full-width 1


@pytest.mark.parametrize("bad", BAD_IDS)
def test_ids_parse_strictly_on_every_id_route(client: TestClient, admin_headers: dict[str, str], bad: str) -> None:
    assert client.get("/v1/images/1").status_code == 200  # the canonical form names an image that exists
    for method, path in (
        ("GET", "/v1/images/{}"),
        ("GET", "/v1/images/{}/thumbnail"),
        ("GET", "/v1/images/{}/info"),
        ("GET", "/v1/images/{}/captions"),
        ("GET", "/images/{}"),
        ("DELETE", "/v1/images/{}"),
    ):
        response = client.request(method, path.format(bad), headers=admin_headers)
        assert response.status_code == 422, (method, path, bad, response.text)
        assert "plain digits" in response.text
    for path in ("/v1/search/image", "/v1/captions"):
        response = client.post(path, data={"image_id": bad.replace("%20", " ")})
        assert response.status_code == 422 and "plain digits" in response.text, (path, bad)
    assert client.get("/v1/images/1/info").json()["id"] == 1  # DELETE refused: still there


@pytest.mark.parametrize("q", ["\u200b", "\u200b\u200b \ufeff", "\x00", "\x00\x00 ", " \u2060\u200e\x1b "])
def test_invisible_query_is_an_empty_query(client: TestClient, q: str) -> None:
    response = client.get("/v1/search", params={"q": q})
    assert response.status_code == 422 and "visible text" in response.json()["detail"]


def test_control_characters_are_cleaned_from_a_query(client: TestClient) -> None:
    body = client.get("/v1/search", params={"q": "\ufeffa dog\x00on the beach\u200b", "lang": "en"}).json()
    assert body["query"] == "a dog on the beach" and body["results"]
    persian = client.get("/v1/search", params={"q": "می\u200cخواهم", "lang": "en"}).json()
    assert persian["query"] == "می\u200cخواهم"  # a zero-width non-joiner inside a word is spelling: kept


def test_422_echoes_at_most_100_characters_of_the_input(client: TestClient, admin_headers: dict[str, str]) -> None:
    response = client.get("/v1/search", params={"q": "x" * 5000})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["query", "q"] and error["type"] == "string_too_long" and "2000" in error["msg"]
    assert error["input"] == "x" * 100 + "…" and len(response.text) < 600
    long_field = client.post("/v1/images", data={"path": "/x", "caption": "y" * 6000}, headers=admin_headers)
    assert long_field.status_code == 422 and len(long_field.text) < 600
    assert long_field.json()["detail"][0]["input"].endswith("…")


KILLED_UPLOAD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path[:0] = [os.environ["REPO"], os.environ["TESTS_DIR"]]
    from api_fixtures import API_KEY, fake_engine_factory
    from fastapi.testclient import TestClient
    from pydantic import SecretStr
    from app.main import create_app
    from app.service_settings import ServiceSettings
    from indexer.store.photo_ingest import PhotoIngest

    def killed(*args, **kwargs):  # the upload's file is written, its row not committed yet
        os.kill(os.getpid(), signal.SIGKILL)

    PhotoIngest.ingest_batch = killed
    root = Path(os.environ["ROOT"])
    settings = ServiceSettings(home=root / "home", index_dir=root / "index", cache_dir=root / "cache",
                               models_dir=root / "models", image_encoder="fake-grid", api_key=SecretStr(API_KEY))
    with TestClient(create_app(settings, fake_engine_factory())) as client:
        client.post("/v1/images", files={"file": ("x.png", sys.stdin.buffer.read())}, headers={"X-API-Key": API_KEY})
    """
)


def test_upload_orphaned_by_a_kill_is_removed_when_the_service_starts(
    service_settings: ServiceSettings, tmp_path: Path
) -> None:
    from api_fixtures import API_KEY, fake_engine_factory

    with TestClient(create_app(service_settings, fake_engine_factory())) as first:
        kept = first.post("/v1/images", files={"file": ("kept.png", png((1, 2, 3)))}, headers={"X-API-Key": API_KEY})
        assert kept.status_code == 201, kept.text
    uploads = service_settings.resolved_index_dir / "uploads"
    env = {**os.environ, "REPO": str(TESTS_DIR.parent), "TESTS_DIR": str(TESTS_DIR), "ROOT": str(tmp_path)}
    killed = subprocess.run([sys.executable, "-c", KILLED_UPLOAD], input=png((9, 9, 9)), env=env, timeout=120)
    assert killed.returncode == -signal.SIGKILL
    kept_name, orphan_name = (content_hash(png(colour)) + ".png" for colour in ((1, 2, 3), (9, 9, 9)))
    assert sorted(path.name for path in uploads.iterdir()) == sorted([kept_name, orphan_name])
    (uploads / f".{orphan_name}.x1y2.tmp").write_bytes(b"half an upload")  # killed inside the atomic write
    (uploads / "notes.txt").write_text("not named like an upload: not ours to delete")

    with TestClient(create_app(service_settings, fake_engine_factory())) as service:
        left = sorted(path.name for path in uploads.iterdir())
        image = service.get(kept.json()["image_url"])
        listed = service.get("/v1/images").json()
    assert left == sorted([kept_name, "notes.txt"])
    assert image.status_code == 200 and image.content == png((1, 2, 3))
    assert [row["id"] for row in listed] == [kept.json()["id"]]
