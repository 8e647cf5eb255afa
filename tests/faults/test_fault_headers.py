"""Issue 60, finding 7: request heads have a size and a time limit, in the HTTP server ``polyglot serve`` runs
(:mod:`app.http_limits`, both of uvicorn's protocols). Before, one request with a 40 MB header was answered 200
(the server grew 85 MB), and a head that trickled in was held 45 s and more with no answer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from api_fixtures import CAPTIONS, fake_engine_factory, free_port

from app.http_limits import guarded_protocol, served_protocol
from app.main import create_app
from app.service_settings import ServiceSettings

pytest_plugins = ("api_fixtures",)
LIMIT = 16 * 1024
TIMEOUT = 2.0  # the test's head time-out (the default is POLYGLOT_HEADER_TIMEOUT_SECONDS, 10 s)


@pytest.fixture(params=["httptools", "h11"])
def server(request: pytest.FixtureRequest, service_settings: ServiceSettings, photo_paths: list[Path]) -> Iterator[int]:
    port = free_port()
    app = create_app(service_settings, fake_engine_factory(photo_paths, CAPTIONS))
    protocol = guarded_protocol(LIMIT, TIMEOUT, http=request.param)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on", http=protocol)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def read_answer(sock: socket.socket, seconds: float = 35.0) -> bytes:
    """Everything the server sends until it closes the connection (or ``seconds`` pass)."""
    sock.settimeout(seconds)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return received


def request_with_header(value_bytes: int) -> bytes:
    return b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * value_bytes + b"\r\n\r\n"


def test_a_head_under_the_limit_is_served_and_one_over_it_is_431(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(request_with_header(LIMIT - 200) + b"")
        sock.shutdown(socket.SHUT_WR)
        assert read_answer(sock).startswith(b"HTTP/1.1 200"), "a 15.8-KB head is served"
    for size in (LIMIT + 1, 40 * 1024):
        with socket.create_connection(("127.0.0.1", server)) as sock:
            sock.sendall(request_with_header(size))
            answer = read_answer(sock)
            assert answer.startswith(b"HTTP/1.1 431"), (size, answer[:200])
            assert b"POLYGLOT_MAX_HEADER_BYTES" in answer


def test_a_40_mb_header_is_cut_off_long_before_it_is_in(server: int) -> None:
    """The server stops reading at the limit and closes: the client cannot push 40 MB (what the kernel's socket
    buffers hold is all that goes), and the server still answers the next client."""
    sent = 0
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.settimeout(10)
        try:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: ")
            block = b"a" * 65536
            while sent < 40 << 20:
                sock.sendall(block)
                sent += len(block)
        except OSError:
            pass
    assert sent < 40 << 20, "all 40 MB were taken in"
    with socket.create_connection(("127.0.0.1", server)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        assert read_answer(sock).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("keep_alive", [False, True])
def test_a_head_that_trickles_in_is_408_within_the_time_out(server: int, keep_alive: bool) -> None:
    """One byte every 0.25 s, never ending the head: answered 408 and closed within the time-out (plus a margin),
    on a new connection and on a kept-alive one after a first request."""
    with socket.create_connection(("127.0.0.1", server)) as sock:
        if keep_alive:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
            sock.settimeout(5)
            assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        start = time.monotonic()
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        answer = b""
        sock.settimeout(0.25)
        while time.monotonic() - start < 30:
            try:
                sock.sendall(b"a")
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT + 2, elapsed
    assert answer.startswith(b"HTTP/1.1 408") and b"POLYGLOT_HEADER_TIMEOUT_SECONDS" in answer, answer[:200]


def test_serve_runs_the_limits_from_the_settings(service_settings: ServiceSettings) -> None:
    protocol = served_protocol(service_settings)
    assert protocol.max_head_bytes == 16 * 1024  # type: ignore[attr-defined]
    assert 0 < protocol.head_timeout <= 30  # type: ignore[attr-defined]
