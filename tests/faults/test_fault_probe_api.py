"""Issue 60, findings 8, 9 and 10: what the API tells about itself and how it answers odd but valid requests.

8. 12 concurrent identical uploads answered ``created: true`` 4 times, all with the same id.
9. Error details exposed the server: the 503 named the database host and port, 507 and 403 server folders; wrong
   admin keys were not slowed down (200 tries in 1.8 s).
10. ``HEAD`` on ``GET`` endpoints (``/health``, ``/search``, ``/``) answered 405.
"""

from __future__ import annotations

import io
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from api_fixtures import API_KEY, CAPTIONS, fake_engine_factory
from fastapi.testclient import TestClient
from PIL import Image

from app.main import create_app
from app.service_settings import ServiceSettings

pytest_plugins = ("api_fixtures", "fault_fixtures")
ADMIN = {"X-API-Key": API_KEY}


def png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------- 8
def test_concurrent_identical_uploads_create_the_photo_exactly_once(live_server: str) -> None:
    data = png(60)
    start = threading.Barrier(12)

    def upload(_: int) -> httpx.Response:
        with httpx.Client(base_url=live_server, timeout=60, headers=ADMIN) as http:
            start.wait()
            return http.post("/v1/images", files={"file": ("same.png", data)})

    with ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(upload, range(12)))
    assert sorted(a.status_code for a in answers) == [200] * 11 + [201], [a.text[:200] for a in answers]
    assert [a.json()["created"] for a in answers].count(True) == 1
    assert len({a.json()["id"] for a in answers}) == 1


# ---------------------------------------------------------------------------------------------------- 9
@pytest.mark.postgres
def test_a_database_outage_names_no_host_or_port(
    service_settings: ServiceSettings,
    photo_paths: list[Path],
    pg_schema: str,
    pg_proxy,  # type: ignore[no-untyped-def]
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{pg_proxy.port}/test?options=-csearch_path%3D{pg_schema}"
    settings = service_settings.model_copy(update={"database_url": url, "record_cache_seconds": 0})
    with TestClient(create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))) as client:
        pg_proxy.down()
        caplog.set_level(logging.ERROR, logger="app.errors")
        answers = [
            client.get("/v1/images/1/info"),
            client.get("/v1/search", params={"q": "a dog"}),
            client.post("/v1/images", files={"file": ("n.png", png(42))}, headers=ADMIN),
            client.get("/v1/ready"),
        ]
        for answer in answers:
            assert answer.status_code == 503, answer.text[:300]
            assert "127.0.0.1" not in answer.text and str(pg_proxy.port) not in answer.text, answer.text
        logged = " ".join(record.getMessage() for record in caplog.records)
        assert str(pg_proxy.port) in logged  # where it is goes to the log
        pg_proxy.up()


def test_refusals_name_no_server_folder(client: TestClient, service_settings: ServiceSettings, tmp_path: Path) -> None:
    outside = tmp_path.parent / "elsewhere.jpg"
    for path in (str(outside), str(tmp_path / "photos"), "/etc/passwd", "../../etc/passwd"):
        answer = client.post("/v1/images", data={"path": path}, headers=ADMIN)
        assert answer.status_code == 403, answer.text
        assert str(tmp_path) not in answer.json()["detail"] and "/etc" not in answer.json()["detail"]


def test_wrong_admin_keys_are_slowed_down_per_address(
    service_settings: ServiceSettings, photo_paths: list[Path]
) -> None:
    settings = service_settings.model_copy(update={"admin_key_tries": 5, "admin_key_retry_seconds": 60})
    app = create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as client:
        statuses = [client.delete("/v1/images/1", headers={"X-API-Key": f"guess-{n}"}).status_code for n in range(8)]
        assert statuses == [403] * 5 + [429] * 3, statuses
        refused = client.delete("/v1/images/1", headers={"X-API-Key": f"guess-{99}"})
        assert 1 <= int(refused.headers["retry-after"]) <= 60 and "too many wrong API keys" in refused.text
        # While refused, even the right key is refused (else a right guess would show among the 429s).
        assert client.delete("/v1/images/1", headers=ADMIN).status_code == 429
    with TestClient(app, raise_server_exceptions=False, client=("10.0.0.7", 5000)) as other:
        assert other.get("/v1/images/1/info").status_code == 200
        assert other.delete("/v1/images/1", headers=ADMIN).status_code == 200  # another address is not held up


def test_failed_keys_refill_with_time(service_settings: ServiceSettings, photo_paths: list[Path]) -> None:
    import time

    settings = service_settings.model_copy(update={"admin_key_tries": 2, "admin_key_retry_seconds": 0.5})
    app = create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as client:
        wrong = {"X-API-Key": "nope"}
        assert [client.delete("/v1/images/1", headers=wrong).status_code for _ in range(3)] == [403, 403, 429]
        time.sleep(0.6)
        assert client.delete("/v1/images/1", headers=ADMIN).status_code == 200


# ---------------------------------------------------------------------------------------------------- 10
@pytest.mark.parametrize(
    "path",
    [
        "/health",
        "/v1/health",
        "/v1/ready",
        "/v1/search?q=dog",
        "/search?q=dog",
        "/",
        "/static/app.js",
        "/favicon.ico",
        "/v1/images",
        "/v1/images/1",
        "/v1/images/1/info",
        "/v1/images/1/thumbnail",
        "/v1/library",
        "/v1/library/months",
        "/openapi.json",
        "/metrics",
    ],
)
def test_head_answers_as_get_without_a_body(client: TestClient, path: str) -> None:
    got = client.get(path)
    head = client.head(path)
    assert head.status_code == got.status_code == 200, (path, head.status_code, got.status_code)
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]
    if "content-length" in got.headers and path not in ("/metrics", "/v1/ready"):  # these change between calls
        assert head.headers["content-length"] == got.headers["content-length"]


def test_head_over_a_real_connection_sends_no_body(live_server: str) -> None:
    with httpx.Client(base_url=live_server, timeout=30) as http:
        for path in ("/health", "/v1/search?q=dog", "/"):
            head = http.head(path)
            assert head.status_code == 200 and head.content == b"", path
            assert int(head.headers["content-length"]) == len(http.get(path).content), path
        assert http.get("/health").status_code == 200  # the connection still serves after the HEADs
