"""Session fixtures for the cluster tests: a real Milvus server process and a real local Ray cluster.

Milvus: the ``milvus`` PyPI package ships the Milvus standalone server binary (embedded etcd, local storage);
we start it in a temp folder, every port it opens a free one (another Milvus on the machine holds 2379, 2380,
9091, 19530), like any external server (gRPC on ``127.0.0.1``), ~10 s once a session; a server that cannot start
fails the fixture within seconds with the reason from its log. Ray: ``ray.init(num_cpus=2)`` starts a real local head (GCS, raylet, worker processes). Both skip with
the reason when their package is not installed on the platform (the ``cluster`` extra; Linux x86-64 for the
Milvus binary).
"""

from __future__ import annotations

import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# What the server's log says when it cannot start (a port taken, a bad config): reported at once, not after the
# package's 180-s wait for /healthz.
_FATAL = re.compile(r"address already in use|bind: |panic:|\[FATAL\]|fatal error", re.IGNORECASE)


class MilvusStartError(RuntimeError):
    """The Milvus server did not start; the message holds the reason from its logs."""


def milvus_server_ports(server: object) -> dict[str, int]:
    """A free port for every port the standalone server opens: each ``*_port`` of its config (the proxy's 19530,
    its internal 19529, every coordinator's and node's), the metrics and health port (9091) and the embedded
    etcd's client and peer ports (2379, 2380). The package randomises none of them by default, so another Milvus
    on the machine (or anything on 2379/9091) kept this one from starting."""
    config = server.config  # type: ignore[attr-defined]
    ports = {key: free_port() for key in config.configurable_items if key.endswith("_port")}
    return ports | {"metrics": free_port(), "etcd_client": free_port(), "etcd_peer": free_port()}


def start_milvus(base_dir: Path, ports: dict[str, int] | None = None, timeout: float = 240.0) -> tuple[object, str]:
    """A Milvus standalone server process in ``base_dir`` on ``ports`` (default: free ones, see
    :func:`milvus_server_ports`); returns it with its URI once ``/healthz`` answers. :class:`MilvusStartError`
    with the log's reason as soon as the log says it cannot start or the process exits (and after ``timeout``)."""
    import urllib.request

    from milvus import MilvusServer

    server = MilvusServer(wait_for_started=False)
    server.set_base_dir(str(base_dir))
    ports = ports or milvus_server_ports(server)
    config = server.config
    # The embedded etcd listens where its own config file says (its defaults: 2379 and 2380): the package's
    # template has no entry for that file, so one is added.
    etcd_config = base_dir / "embed-etcd.yaml"
    client, peer = f"http://127.0.0.1:{ports['etcd_client']}", f"http://127.0.0.1:{ports['etcd_peer']}"
    etcd_config.write_text(
        f"name: test-milvus\nlisten-client-urls: {client}\nadvertise-client-urls: {client}\n"
        f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: test-milvus={peer}\n"
    )
    config.template_text = config.template_text.replace(
        "etcd:\n", "etcd:\n  config:\n    path: {{ etcd_config_path }}\n", 1
    )
    config.parse_template()
    config.set("etcd_config_path", str(etcd_config))
    for key, port in ports.items():
        if key.endswith("_port"):
            config.set(key, port)
    config.set("etcd_port", ports["etcd_client"])
    server.webservice_port = ports["metrics"]
    # A "Strong" read waits for the next time tick: 20 ms ticks instead of 200 keep each call ~40 ms here.
    for key, value in {"proxy.timeTickInterval": 20, "queryCoord.checkInterval": 100}.items():
        config.set(key, value)
    server.start()
    logs = [base_dir / "logs" / name for name in ("milvus-stdout.log", "milvus-stderr.log", "etcd.log")]

    def reason() -> str | None:
        for log in logs:
            text = log.read_text(errors="replace") if log.is_file() else ""
            for line in text.splitlines():
                if _FATAL.search(line):
                    return f"{log.name}: {line.strip()[:400]}"
        return None

    started = time.monotonic()
    health = f"http://127.0.0.1:{server.webservice_port}/healthz"
    try:
        while True:
            try:
                with urllib.request.urlopen(health, timeout=2) as answer:
                    if b"OK" in answer.read():
                        return server, f"http://127.0.0.1:{server.listen_port}"
            except OSError:
                pass
            why = reason()
            if server.server_proc.poll() is not None:  # type: ignore[attr-defined]
                why = why or f"the server exited with {server.server_proc.returncode}"  # type: ignore[attr-defined]
            if why is None and time.monotonic() - started > timeout:
                why = f"no answer on {health} after {timeout:g} s"
            if why is not None:
                raise MilvusStartError(f"Milvus did not start ({why}); logs in {base_dir / 'logs'}")
            time.sleep(0.5)
    except BaseException:
        server.stop()
        raise


@pytest.fixture(scope="session")
def milvus_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URI of a Milvus standalone server process started for this session, every port of it a free one."""
    try:
        import milvus  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"the Milvus server package is not installed (pip install '.[cluster]', Linux x86-64): {exc}")
    try:
        server, uri = start_milvus(tmp_path_factory.mktemp("milvus"))
    except MilvusStartError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield uri
    finally:
        server.stop()  # type: ignore[attr-defined]


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
