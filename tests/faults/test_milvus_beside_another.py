"""Issue 34: the suite beside another Milvus. On a fresh clone six Milvus tests failed after 180 s each because
another Milvus on the machine held the ports the test server's embedded etcd (2379, 2380) and metrics (9091) use:
the fixture randomised only the main port, and the package waits 180 s for a server that already gave up.

Now every port the test server opens is a free one (tests/cluster_fixtures.py: ``milvus_server_ports``), and a
server that cannot start fails within seconds with the reason from its log."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import MilvusStartError, free_port, start_milvus

# What another Milvus standalone (the package's defaults, or milvusdb/milvus with its embedded etcd) listens on.
DEFAULT_PORTS = (2379, 2380, 9091, 19529, 19530, 19531, 53100, 21121, 21123, 21124, 22930, 13333)


@pytest.fixture
def another_milvus_s_ports() -> Iterator[list[int]]:
    """Listeners on every default port of a Milvus standalone that is free now, on 127.0.0.1 as another
    ``milvus`` package server's embedded etcd binds them: what another Milvus on the machine holds."""
    held: list[socket.socket] = []
    for port in DEFAULT_PORTS:
        sock = socket.socket()
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen()
            held.append(sock)
        except OSError:  # taken already: by another Milvus, or anything else
            sock.close()
    try:
        yield [sock.getsockname()[1] for sock in held]
    finally:
        for sock in held:
            sock.close()


def listening_ports(pid: int) -> set[int]:
    """TCP ports the process listens on (``ss``)."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    return {
        int(m[1]) for line in out.splitlines() if f"pid={pid}," in line for m in [re.search(r":(\d+)\s", line)] if m
    }


def test_the_test_server_starts_beside_another_milvus_and_opens_only_its_own_ports(
    tmp_path: Path, another_milvus_s_ports: list[int]
) -> None:
    pytest.importorskip("milvus", reason="the Milvus server package is not installed (pip install '.[cluster]')")
    from pymilvus import MilvusClient

    server, uri = start_milvus(tmp_path / "milvus")
    try:
        client = MilvusClient(uri=uri, timeout=30)
        assert client.list_collections() == []
        client.close()
        pid = server.server_proc.pid  # type: ignore[attr-defined]
        opened = listening_ports(pid)
        assert opened and not opened & set(DEFAULT_PORTS), (opened, another_milvus_s_ports)
    finally:
        server.stop()  # type: ignore[attr-defined]


def test_a_server_that_cannot_start_fails_within_seconds_with_the_reason(tmp_path: Path) -> None:
    pytest.importorskip("milvus", reason="the Milvus server package is not installed (pip install '.[cluster]')")
    from cluster_fixtures import milvus_server_ports
    from milvus import MilvusServer

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ports = milvus_server_ports(MilvusServer(wait_for_started=False)) | {"etcd_client": taken.getsockname()[1]}
    start = time.monotonic()
    with contextlib.closing(taken), pytest.raises(MilvusStartError) as failed:
        start_milvus(tmp_path / "milvus", ports)
    assert time.monotonic() - start < 60, time.monotonic() - start
    assert "address already in use" in str(failed.value), str(failed.value)
    assert free_port() and os.path.isdir(tmp_path / "milvus" / "logs")
