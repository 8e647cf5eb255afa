"""Issue 34: what the HTTP layer answers to methods a path does not have and to bodies that never finish.

* Defect 7: ``OPTIONS /v1/images`` answered 405 ``allow: GET`` although POST exists; on ``/v1/images/1`` HEAD and
  DELETE were missing from ``allow`` (Starlette named the first route of the path only; FastAPI makes one per
  method).
* A body trickled at one byte every 20 s was still unanswered at 80 s: the time-out bounded the gap between
  bytes, not the whole body (``POLYGLOT_BODY_TOTAL_SECONDS`` now).
"""

from __future__ import annotations

import contextlib
import socket
import time

import pytest
from fastapi.testclient import TestClient

from app.service_settings import ServiceSettings

pytest_plugins = ("api_fixtures",)


def allowed(answer) -> set[str]:  # type: ignore[no-untyped-def]
    return {method.strip() for method in answer.headers["allow"].split(",")}


@pytest.mark.parametrize("prefix", ["/v1", ""])
def test_405_lists_every_method_of_the_path(client: TestClient, prefix: str) -> None:
    for method, path, methods in [
        ("OPTIONS", "/images", {"GET", "POST"}),
        ("PUT", "/images", {"GET", "POST"}),
        ("OPTIONS", "/images/1", {"GET", "HEAD", "DELETE"}),
        ("PATCH", "/images/1", {"GET", "HEAD", "DELETE"}),
        ("POST", "/images/1/thumbnail", {"GET", "HEAD"}),
        ("DELETE", "/search", {"GET"}),
        ("PUT", "/static/app.js", {"GET", "HEAD"}),
    ]:
        if path.startswith("/static") and prefix:
            continue  # the page's files are served at the root only
        answer = client.request(method, prefix + path)
        assert answer.status_code == 405, (method, path, answer.status_code)
        assert answer.headers["content-type"].startswith("application/json")
        assert allowed(answer) == methods, (method, path, answer.headers["allow"])
        for other in methods - {"HEAD"}:  # every method it names is one the path answers (not 405)
            assert client.request(other, prefix + path).status_code != 405, (other, path)


@pytest.fixture
def body_limits(service_settings: ServiceSettings) -> ServiceSettings:
    service_settings.service.body_timeout_seconds = 2.0  # a byte every 0.5 s never trips the gap …
    service_settings.service.body_total_seconds = 3.0  # … the whole body must be in within 3 s
    return service_settings


def test_a_trickled_body_is_answered_408_when_the_whole_body_takes_too_long(body_limits, live_server: str) -> None:  # type: ignore[no-untyped-def]
    host, port = live_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/search/image HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
            b'Content-Length: 1000\r\n\r\n--b\r\nContent-Disposition: form-data; name="k"\r\n\r\n'
        )  # then the field's value, trickled
        start = time.monotonic()
        sock.settimeout(0.5)
        received = b""
        while time.monotonic() - start < 12:
            if not received:  # once the answer is arriving, stop: a byte sent after the server's close is reset
                with contextlib.suppress(OSError):  # closed by the server after its answer
                    sock.sendall(b"1")  # one byte every 0.5 s
            try:
                chunk = sock.recv(4096)
            except TimeoutError:
                continue
            except ConnectionResetError:  # a byte of ours reached the closed socket: the kernel read the answer first
                break
            if not chunk:
                break
            received += chunk
        waited = time.monotonic() - start
    assert received.startswith(b"HTTP/1.1 408"), (received[:200], waited)
    assert b"POLYGLOT_BODY_TOTAL_SECONDS" in received and 2.5 < waited < 6, waited


def test_a_body_sent_whole_in_time_is_not_cut_off(body_limits, live_server: str) -> None:  # type: ignore[no-untyped-def]
    """The bounds apply to the body only: a request whose body arrived is answered, however long it then runs."""
    host, port = live_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"GET /v1/languages HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(4096):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200"), received[:200]
