"""The load generator in C: ``wrk`` (Debian package ``wrk``) replaying a list of distinct request paths.

On a 2-core machine the Python client competes with the server for the same cores (``GET /health`` alone costs
the httpx client ~9 ms p50 at 8 clients); wrk costs a fraction of that, so its numbers are closer to what the
server itself does. Same result schema as ``load_search.run_level``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

# The connections of a wrk thread share one walk through the path list (each thread starts at its own offset),
# so no path repeats before the list runs out; done() prints the numbers as one JSON line.
SCRIPT = """
local paths = {}
for line in io.lines("%(paths)s") do paths[#paths + 1] = line end
local counter = 0
function setup(thread) thread:set("offset", counter * 997); counter = counter + 1 end
local i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[((offset or 0) + i) %% #paths + 1])
end
done = function(summary, latency, requests)
  local errors = summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write
    + summary.errors.timeout
  io.write(string.format('{"requests": %%d, "errors": %%d, "micros": %%d, "p50": %%d, "p95": %%d, "p99": %%d, '
    .. '"mean": %%f}\\n', summary.requests, errors, summary.duration, latency:percentile(50),
    latency:percentile(95), latency:percentile(99), latency.mean))
end
"""


def available() -> bool:
    return shutil.which("wrk") is not None


def run_level(url: str, clients: int, pool: list[tuple[str, str]], seconds: float, k: int, path: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        paths = Path(folder) / "paths.txt"
        lines = [
            f"{path}?{urlencode({'q': text, 'lang': lang, 'k': k})}" if path == "/search" else path
            for text, lang in pool
        ]
        paths.write_text("\n".join(lines) + "\n", encoding="utf-8")
        script = Path(folder) / "replay.lua"
        script.write_text(SCRIPT % {"paths": paths}, encoding="utf-8")
        command = [
            "wrk",
            "-t1",
            f"-c{clients}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "30s",
            "-s",
            str(script),
            url,
        ]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    stats = json.loads(next(line for line in output.splitlines() if line.startswith("{")))
    wall = stats["micros"] / 1e6
    return {
        "path": path,
        "clients": clients,
        "requests": stats["requests"],
        "errors": {"any": stats["errors"]} if stats["errors"] else {},
        "seconds": round(wall, 2),
        "rps": round(stats["requests"] / wall, 1),
        "p50_ms": round(stats["p50"] / 1000, 1),
        "p95_ms": round(stats["p95"] / 1000, 1),
        "p99_ms": round(stats["p99"] / 1000, 1),
        "mean_ms": round(stats["mean"] / 1000, 1),
    }


def split_clients(clients: int, langs: Sequence[str]) -> dict[str, int]:
    """Connections per language, handed out in turn (8 over 7 languages: the first gets 2, the others 1)."""
    return {lang: clients // len(langs) + (i < clients % len(langs)) for i, lang in enumerate(langs)}


def run_mixed(
    url: str, clients: int, pools: dict[str, list[tuple[str, str]]], seconds: float, k: int
) -> dict[str, dict[str, Any]]:
    """One wrk per language at the same time, ``clients`` connections in all: each language's latency under the
    mixed load (a single wrk has one histogram for all its requests)."""
    shares = {lang: n for lang, n in split_clients(clients, list(pools)).items() if n > 0}
    with ThreadPoolExecutor(len(shares)) as runner:
        futures = {
            lang: runner.submit(run_level, url, n, pools[lang], seconds, k, "/search") for lang, n in shares.items()
        }
        return {lang: future.result() for lang, future in futures.items()}
