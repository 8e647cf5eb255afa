"""Outage helpers for the fault tests: a TCP proxy that can cut and refuse connections, put in front of the real
PostgreSQL and the real Milvus server: a backend that goes away and comes back, without stopping the shared
servers other tests use."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest


class TcpProxy:
    """``127.0.0.1:port`` → ``upstream``. ``down()`` closes the listener and every connection (clients are refused,
    as by a stopped server); ``up()`` listens again on the same port."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):  # wakes the thread blocked in accept(); close() alone does not
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def pg_proxy() -> Iterator[TcpProxy]:
    proxy = TcpProxy(("127.0.0.1", 5432))
    proxy.up()
    try:
        yield proxy
    finally:
        proxy.down()


@pytest.fixture
def milvus_proxy(milvus_uri: str) -> Iterator[TcpProxy]:
    """The test run's Milvus server behind a :class:`TcpProxy`: ``down()`` is a Milvus that went away (every
    connection cut, new ones refused), ``up()`` the same server back with its data.

    Why not kill and restart the server process itself: the ``milvus`` package's standalone server (2.3.5),
    restarted on its data after being killed, never served again in the 3 minutes tried (its embedded etcd still
    held the dead process's node id: "node not match expectedNodeID=1 actualNodeID=2"); the client sees the
    same refused connections either way."""
    host, port = milvus_uri.removeprefix("http://").rsplit(":", 1)
    proxy = TcpProxy((host, int(port)))
    proxy.up()
    try:
        yield proxy
    finally:
        proxy.down()


def wait_until(check: object, seconds: float = 90.0) -> float:
    """Poll ``check()`` until it is true; returns the seconds it took (fails the test after ``seconds``)."""
    start = time.monotonic()
    while not check():  # type: ignore[operator]
        if time.monotonic() - start > seconds:
            raise AssertionError(f"not true after {seconds} s")
        time.sleep(0.5)
    return time.monotonic() - start


class SilentProxy:
    """``tests/silent_proxy.py`` in its own process in front of ``upstream``: ``silence()`` makes it drop every
    packet from then on (connections stay open, nothing is answered), ``resume()`` forwards again."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        import subprocess
        import sys
        from pathlib import Path

        script = Path(__file__).resolve().parent / "silent_proxy.py"
        self.process = subprocess.Popen(
            [sys.executable, str(script), upstream[0], str(upstream[1])], stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def silence(self) -> None:
        import signal

        self.process.send_signal(signal.SIGUSR1)

    def resume(self) -> None:
        import signal

        self.process.send_signal(signal.SIGUSR2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def silent_pg_proxy() -> Iterator[SilentProxy]:
    proxy = SilentProxy(("127.0.0.1", 5432))
    try:
        yield proxy
    finally:
        proxy.stop()
