"""Issue 24, findings 5, 6, 7 and 9: what the service stores, serves and reads is what it says it is.

5. An upload named ``evil.html`` (a PPM) was stored as ``<sha>.html`` and served as ``text/html`` (an ICO named
   ``x.svg`` as ``image/svg+xml``), with no ``nosniff`` and no CSP.
6. An indexed photo replaced by a symlink to ``/etc/passwd`` was served to anyone.
7. Server paths were read anywhere (no allowed roots), existence leaked as 422 vs 404, and a multi-GB file named
   ``.jpg`` was read whole into memory (by the service and by ``index add``).
9. A small PNG with a large text chunk got 413; a body shorter than its Content-Length was never answered.
"""

from __future__ import annotations

import io
import resource
import socket
import time
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import API_KEY
from fastapi.testclient import TestClient
from PIL import Image, PngImagePlugin

from indexer.settings import Settings
from indexer.store.ingest import read_files

pytest_plugins = ("api_fixtures",)
ADMIN = {"X-API-Key": API_KEY}


def image_bytes(fmt: str, size: tuple[int, int] = (32, 32), seed: int = 0) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("fmt", "name", "served_as"),
    [
        ("PPM", "evil.html", "image/x-portable-anymap"),
        ("ICO", "x.svg", "image/x-icon"),
        ("PNG", "page.htm", "image/png"),
    ],
)
def test_uploads_are_stored_and_served_by_their_detected_format_only(
    client: TestClient, fmt: str, name: str, served_as: str
) -> None:
    """Served with the detected format's own type whatever the name (docs/faults.md, issue 24 finding 5): a PPM,
    which no browser shows, is handed out as ``image/x-portable-anymap`` (with ``nosniff`` and a sandboxing CSP),
    never as the HTML its name claims. (docs/faults.md once said 404 for it; issue 34 made the two agree.)"""
    added = client.post("/v1/images", files={"file": (name, image_bytes(fmt, seed=len(name)))}, headers=ADMIN)
    assert added.status_code == 201, added.text
    image_id = added.json()["id"]
    stored = client.app.state.engine.images.get(image_id).path  # type: ignore[attr-defined]
    assert not stored.endswith((".html", ".htm", ".svg")), stored
    served = client.get(f"/v1/images/{image_id}")
    assert served.status_code == 200 and served.headers["content-type"] == served_as, served.headers
    for response in (served, client.get(f"/v1/images/{image_id}/thumbnail")):
        assert response.headers["x-content-type-options"] == "nosniff"
        if response.status_code == 200:
            assert response.headers["content-security-policy"].startswith("default-src 'none'")
    head = client.head(f"/v1/images/{image_id}")
    assert head.status_code == served.status_code and head.content == b""


def test_page_has_security_headers(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"


def test_a_photo_replaced_by_a_symlink_or_changed_is_not_served(client: TestClient, photo_paths: list[Path]) -> None:
    index = client.app.state.engine.images  # type: ignore[attr-defined]
    by_path = {Path(r.path).name: r.id for r in index.list(limit=100)}
    victim, changed = photo_paths[0], photo_paths[1]
    assert client.get(f"/v1/images/{by_path[victim.name]}").status_code == 200
    victim.unlink()
    victim.symlink_to("/etc/passwd")
    leaked = client.get(f"/v1/images/{by_path[victim.name]}")
    assert leaked.status_code == 404 and b"root:" not in leaked.content
    changed.write_bytes(image_bytes("PNG", seed=99))  # another picture under the indexed name
    assert client.get(f"/v1/images/{by_path[changed.name]}").status_code == 404


def test_server_paths_only_inside_the_allowed_roots_with_one_answer(
    client: TestClient, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside_dir = tmp_path_factory.mktemp("elsewhere")
    outside = outside_dir / "secret.png"
    outside.write_bytes(image_bytes("PNG", seed=5))
    link = tmp_path / "inside-link.png"  # inside the root, pointing out of it
    link.symlink_to(outside)
    answers = [
        client.post("/v1/images", data={"path": str(path)}, headers=ADMIN)
        for path in (outside, outside_dir / "missing.png", link, "/etc/passwd", "relative.png", tmp_path / "x.txt")
    ]
    assert {a.status_code for a in answers} == {403}
    assert len({a.text for a in answers}) == 1  # nothing tells an existing file from a missing one
    assert client.get("/v1/images", params={"limit": 500}).json().__len__() == 8


def test_files_over_the_size_limit_are_refused_before_they_are_read(
    client: TestClient, tmp_path: Path, service_settings
) -> None:  # type: ignore[no-untyped-def]
    huge = tmp_path / "huge.jpg"
    with open(huge, "wb") as handle:  # 3 GiB, sparse: nothing is written, a read would allocate it all
        handle.truncate(3 << 30)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    refused = client.post("/v1/images", data={"path": str(huge)}, headers=ADMIN)
    assert refused.status_code == 422 and "POLYGLOT_MAX_FILE_BYTES" in refused.json()["detail"]
    batch = read_files([huge], {}, {}, Settings().index.max_file_bytes)  # what `polyglot index add` does
    assert batch.failed and "file too large" in batch.failed[0][1] and not batch.items
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 50 and time.perf_counter() - start < 2, (grown_mb, time.perf_counter() - start)


def test_metadata_too_large_is_422_not_413(client: TestClient) -> None:
    info = PngImagePlugin.PngInfo()
    info.add_text("comment", "x" * 2_000_000, zip=True)  # compresses to a few KB, decompresses past Pillow's cap
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16)).save(buffer, format="PNG", pnginfo=info)
    data = buffer.getvalue()
    assert len(data) < 20_000
    answer = client.post("/v1/search/image", files={"file": ("meta.png", data)})
    assert answer.status_code == 422 and "too large" in answer.json()["detail"].lower(), answer.text


@pytest.fixture
def quick_timeout(service_settings, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    service_settings.service.body_timeout_seconds = 1.0
    return service_settings


def test_a_stalled_request_body_is_answered_408_and_closed(quick_timeout, live_server: str) -> None:  # type: ignore[no-untyped-def]
    host, port = live_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/search/image HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
            b"Content-Length: 1000\r\n\r\n--b\r\n"  # 1,000 announced, 5 sent
        )
        start = time.monotonic()
        received = b""
        while chunk := sock.recv(4096):  # until the server closes the connection
            received += chunk
        waited = time.monotonic() - start
    assert received.startswith(b"HTTP/1.1 408"), received[:200]
    assert b"POLYGLOT_BODY_TIMEOUT_SECONDS" in received and waited < 5, waited
