"""Searches running while an admin adds and removes images through a real server: never an error, and every
change is visible as soon as the admin call returns."""

from __future__ import annotations

import io
import threading

import httpx
import numpy as np
from PIL import Image

pytest_plugins = ("api_fixtures",)


def _png(seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(24, 24, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def test_reads_during_admin_writes(live_server: str, admin_headers: dict[str, str]) -> None:
    stop = threading.Event()
    statuses: list[int] = []

    def reader(number: int) -> None:
        with httpx.Client(base_url=live_server, timeout=30) as http:
            while not stop.is_set():
                statuses.append(http.get("/v1/search", params={"q": f"photo {number}", "k": 50}).status_code)

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    try:
        with httpx.Client(base_url=live_server, timeout=30, headers=admin_headers) as admin:
            for seed in range(5):
                data = _png(100 + seed)
                added = admin.post("/v1/images", files={"file": (f"n{seed}.png", data)})
                assert added.status_code == 201, added.text
                new_id = added.json()["id"]
                top = admin.post("/v1/search/image", files={"file": ("q.png", data)}, params={"k": 1}).json()
                assert top["results"][0]["id"] == new_id
                assert admin.delete(f"/v1/images/{new_id}").status_code == 200
                ids = [r["id"] for r in admin.get("/v1/search", params={"q": "x", "k": 50}).json()["results"]]
                assert new_id not in ids
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert statuses and set(statuses) == {200}
