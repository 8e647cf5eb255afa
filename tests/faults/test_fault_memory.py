"""Issue 24, finding 4: memory is bounded per process, not per request.

16 concurrent ``/search/image`` uploads of a 3000×3000 RGBA PNG (tens of KB that decode to 36 MB) against
a service process with ``POLYGLOT_MAX_IMAGE_PIXELS=9000000``. Before, each decoded image waited between the
decode task and the embed task, so the pool held several at once and the process grew with the concurrency
(the issue measured 6.2 GB for 16 uploads of 8000×8000, and 3.8 GB still resident afterwards). Now decode and
embed are one task inside a process-wide pixel budget (app/pixel_budget.py): the documented bound is
``8 bytes × POLYGLOT_DECODE_PIXELS_IN_FLIGHT`` (default: the pixel limit) above the idle process, plus a margin
for the encoder and the buffers of the 16 uploads (``MARGIN_MB``).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from api_fixtures import free_port
from PIL import Image

TESTS = Path(__file__).resolve().parents[1]
PIXELS = 9_000_000
UPLOADS = 16
MARGIN_MB = 150


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def burst_peak(pid: int, url: str, data: bytes) -> tuple[float, float, float, list[int]]:
    """(idle MB, peak MB during the burst, MB after it, statuses) for ``UPLOADS`` concurrent uploads."""
    idle = rss_mb(pid)
    peak = [idle]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    def upload(_: int) -> int:
        answer = httpx.post(url, files={"file": ("big.png", data)}, timeout=600)
        return answer.status_code

    with ThreadPoolExecutor(UPLOADS) as pool:
        statuses = list(pool.map(upload, range(UPLOADS)))
    done.set()
    sampler.join()
    time.sleep(0.5)
    return idle, peak[0], rss_mb(pid), statuses


@pytest.mark.slow
def test_sixteen_concurrent_large_uploads_stay_within_the_documented_bound(tmp_path: Path) -> None:
    if not Path("/proc/self/status").exists():
        pytest.skip("needs /proc to read the server's resident memory")
    buffer = io.BytesIO()
    Image.new("RGBA", (3000, 3000), (10, 200, 30, 255)).save(buffer, format="PNG")
    data = buffer.getvalue()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLYGLOT_")}
    env |= {"POLYGLOT_MAX_IMAGE_PIXELS": str(PIXELS), "POLYGLOT_MAX_UPLOAD_BYTES": "5000000"}
    server = subprocess.Popen([sys.executable, str(TESTS / "fault_server.py"), str(port), str(tmp_path)], env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{base}/v1/ready", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and server.poll() is None, "the server did not start"
            time.sleep(0.3)
        httpx.post(f"{base}/v1/search/image", files={"file": ("big.png", data)}, timeout=600)  # warm: one alone
        idle, peak, after, statuses = burst_peak(server.pid, f"{base}/v1/search/image", data)
    finally:
        server.terminate()
        server.wait(timeout=30)
    bound = 8 * PIXELS / 2**20 + MARGIN_MB
    print(f"idle {idle:.0f} MB, peak {peak:.0f} MB (+{peak - idle:.0f}), after {after:.0f} MB; bound +{bound:.0f} MB")
    assert statuses == [200] * UPLOADS, statuses
    assert peak - idle <= bound, f"peak RSS grew by {peak - idle:.0f} MB over {UPLOADS} uploads; bound {bound:.0f} MB"
    assert after - idle <= MARGIN_MB, f"RSS stayed {after - idle:.0f} MB above idle after the burst"
