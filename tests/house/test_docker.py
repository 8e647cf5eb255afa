"""Deployment files: `docker compose config` validates them (without a compose client: failed under CI, skipped elsewhere), and the
container's own commands — the HEALTHCHECK snippet and the CMD — work when run outside Docker."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from required_tools import tool_missing

pytest_plugins = ("api_fixtures",)

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text()
SECRETS = {"POLYGLOT_API_KEY": "test-key", "POSTGRES_PASSWORD": "test-password"}


def compose_command() -> list[str] | None:
    """`docker compose` (v2 plugin) if it works, else the standalone `docker-compose`."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    standalone = shutil.which("docker-compose")
    return [standalone] if standalone else None


def compose_config(*files: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = compose_command()
    if command is None:
        tool_missing("no docker compose client installed (docker compose or docker-compose)")
    args = [arg for name in files for arg in ((name,) if name.startswith("--") else ("-f", str(ROOT / name)))]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("POLYGLOT_", "POSTGRES_"))}
    return subprocess.run(
        [*command, *args, "config"], capture_output=True, text=True, cwd=ROOT, env={**clean, **env}, timeout=60
    )


def dockerfile_json(instruction: str) -> list[str]:
    """The exec-form (JSON array) argument of the last ``instruction`` in the Dockerfile."""
    matches = re.findall(rf"^{instruction}\s+(?:--\S+\s+|\\\n\s*)*(?:CMD\s+)?(\[.*\])\s*$", DOCKERFILE, re.M)
    assert matches, f"no exec-form {instruction} in the Dockerfile"
    return list(json.loads(matches[-1]))


def test_compose_config_is_valid_and_wired() -> None:
    result = compose_config("docker-compose.yml", env=SECRETS)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load(result.stdout)
    services = config["services"]
    assert {"api", "postgres", "indexer", "models"} <= set(services)
    api = services["api"]
    assert api["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert api["depends_on"]["models"]["condition"] == "service_completed_successfully"
    assert "healthcheck" in services["postgres"]
    assert api["environment"]["POLYGLOT_API_KEY"] == "test-key"
    assert "test-password@postgres" in api["environment"]["POLYGLOT_DATABASE_URL"]
    assert {"index", "models", "images", "pgdata"} <= set(config["volumes"])
    mounts = {str(v).split(":")[0] if isinstance(v, str) else v["source"] for v in api["volumes"]}
    assert {"index", "models", "images"} <= mounts
    assert services["indexer"]["command"][:3] == ["polyglot", "index", "add"]
    assert published(api["ports"]) == [("127.0.0.1", 8000, 8000)]


def published(ports: list[object]) -> list[tuple[str, int, int]]:
    """(host ip, host port, container port) of compose's ports, short ("ip:host:container/tcp", compose v1) or
    long form (compose v2)."""
    out = []
    for port in ports:
        if isinstance(port, dict):
            out.append((str(port.get("host_ip", "")), int(port["published"]), int(port["target"])))
        else:
            ip, host, container = str(port).split("/")[0].rsplit(":", 2)
            out.append((ip, int(host), int(container)))
    return out


def test_api_port_is_published_on_loopback_unless_asked() -> None:
    # Without a compose client: the raw file's default. The comment at the top says 127.0.0.1; so must the port.
    api = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["api"]
    assert api["ports"] == ["${POLYGLOT_BIND:-127.0.0.1}:${POLYGLOT_PORT:-8000}:8000"]
    result = compose_config("docker-compose.yml", env={**SECRETS, "POLYGLOT_BIND": "0.0.0.0", "POLYGLOT_PORT": "9000"})
    assert result.returncode == 0, result.stderr
    assert published(yaml.safe_load(result.stdout)["services"]["api"]["ports"]) == [("0.0.0.0", 9000, 8000)]


@pytest.mark.parametrize("missing", sorted(SECRETS))
def test_compose_fails_loudly_without_secrets(missing: str) -> None:
    env = {k: v for k, v in SECRETS.items() if k != missing}
    result = compose_config("docker-compose.yml", env=env)
    assert result.returncode != 0 and f"set {missing}" in result.stderr


def test_cluster_profile_adds_milvus_and_ray() -> None:
    result = compose_config("docker-compose.yml", "--profile=cluster", env=SECRETS)
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert {"milvus", "etcd", "minio", "ray-head", "ray-worker", "ray-indexer", "api", "postgres"} <= set(services)
    assert services["ray-head"]["command"][:3] == ["ray", "start", "--head"]
    assert "--address=ray-head:6379" in services["ray-worker"]["command"]
    assert services["ray-worker"]["build"]["args"]["EXTRAS"] == "cluster"  # Ray is in that image
    assert services["ray-indexer"]["command"][:7] == [
        "polyglot",
        "index",
        "add",
        "/images",
        "--engine",
        "ray",
        "--address",
    ]
    assert services["api"]["environment"]["POLYGLOT_INDEX_MILVUS_URI"] == "http://milvus:19530"
    raw = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert all(raw[name]["profiles"] == ["cluster"] for name in ("milvus", "etcd", "minio", "ray-head", "ray-worker"))


def test_gpu_override() -> None:
    result = compose_config("docker-compose.yml", "docker-compose.gpu.yml", env=SECRETS)
    assert result.returncode == 0, result.stderr
    api = yaml.safe_load(result.stdout)["services"]["api"]
    assert api["environment"]["POLYGLOT_DEVICE"] == "cuda"
    assert api["build"]["args"]["TORCH_VARIANT"].startswith("cu")
    assert api["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]


def test_dockerfile_shape() -> None:
    assert len(re.findall(r"^FROM\s", DOCKERFILE, re.M)) >= 2  # multi-stage
    assert re.search(r"^ARG TORCH_VARIANT=cpu$", DOCKERFILE, re.M)
    assert re.search(r"^USER polyglot$", DOCKERFILE, re.M) and "useradd" in DOCKERFILE
    assert dockerfile_json("ENTRYPOINT") == ["/usr/bin/tini", "--"]
    assert "curl" not in dockerfile_json("HEALTHCHECK")[-1]
    assert re.search(r'^VOLUME \["/data", "/models"\]$', DOCKERFILE, re.M)


def test_healthcheck_snippet_works_against_a_running_server(live_server: str) -> None:
    command = dockerfile_json("HEALTHCHECK")
    assert command[:2] == ["python", "-c"]
    assert "/ready'" in command[2]  # readiness: "healthy" means models and index are loaded
    snippet = command[2].replace("http://127.0.0.1:8000", live_server)
    assert snippet != command[2]
    ok = subprocess.run([sys.executable, "-c", snippet], capture_output=True, timeout=30)
    assert ok.returncode == 0, ok.stderr
    down = subprocess.run([sys.executable, "-c", command[2].replace(":8000", ":9")], capture_output=True, timeout=30)
    assert down.returncode != 0


def test_container_commands_run_outside_docker() -> None:
    """The CMD and the compose services' commands exist in this CLI and accept their options."""
    polyglot = str(Path(sys.executable).with_name("polyglot"))
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    commands = [dockerfile_json("CMD"), compose["api"]["command"], compose["indexer"]["command"]]
    commands += [compose["models"]["command"], compose["ray-indexer"]["command"]]
    for command in commands:
        assert command[0] == "polyglot", command
        options = [arg for arg in command[1:] if arg.startswith("--")]
        words = [arg for arg in command[1:] if not arg.startswith("-") and not re.match(r"^[/\d.]", arg)]
        result = subprocess.run([polyglot, *words, "--help"], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (shlex.join(command), result.stderr)
        for option in options:
            assert option in result.stdout, (option, shlex.join(command))


def test_healthcheck_fails_while_the_service_is_alive_but_not_ready() -> None:
    """A server whose /health says ok but whose /ready says 503 (still loading) is not healthy."""
    import http.server
    import threading

    class Loading(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/health" else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Loading)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        snippet = dockerfile_json("HEALTHCHECK")[2].replace(":8000", f":{server.server_port}")
        loading = subprocess.run([sys.executable, "-c", snippet], capture_output=True, timeout=30)
        alive = subprocess.run([sys.executable, "-c", snippet.replace("/ready", "/health")], timeout=30)
    finally:
        server.shutdown()
    assert loading.returncode != 0 and alive.returncode == 0
