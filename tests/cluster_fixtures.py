"""Session fixtures for the cluster tests: a real Milvus server process and a real local Ray cluster.

Milvus: the ``milvus`` PyPI package ships the Milvus standalone server binary (embedded etcd, local storage);
we start it in a temp folder on free ports, like any external server (gRPC on ``127.0.0.1``), ~10 s once a
session. Ray: ``ray.init(num_cpus=2)`` starts a real local head (GCS, raylet, worker processes). Both skip with
the reason when their package is not installed on the platform (the ``cluster`` extra; Linux x86-64 for the
Milvus binary).
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URI of a Milvus standalone server process started for this session."""
    try:
        from milvus import MilvusServer
    except ImportError as exc:
        pytest.skip(f"the Milvus server package is not installed (pip install '.[cluster]', Linux x86-64): {exc}")
    server = MilvusServer()
    server.set_base_dir(str(tmp_path_factory.mktemp("milvus")))
    server.listen_port = free_port()
    # A "Strong" read waits for the next time tick: 20 ms ticks instead of 200 keep each call ~40 ms here.
    for key, value in {"proxy.timeTickInterval": 20, "queryCoord.checkInterval": 100}.items():
        server.config.set(key, value)
    server.start()  # waits until /healthz answers
    try:
        yield f"http://127.0.0.1:{server.listen_port}"
    finally:
        server.stop()


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """A real local Ray cluster with 2 CPUs; workers import the tests' helpers (conftest's fake encoder)."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install '.[cluster]')")
    # Worker processes inherit the driver's environment: let them import conftest and this checkout.
    paths = [str(TESTS), str(TESTS.parent), *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    # Ray's Unix sockets live under its temporary folder and may not exceed 107 bytes: under a long TMPDIR (some CI
    # runners) ray.init failed, so it gets a short folder of its own.
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp" if Path("/tmp").is_dir() else None)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False, _temp_dir=temp_dir)
    try:
        yield
    finally:
        ray.shutdown()
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous
