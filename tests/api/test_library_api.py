"""Issue 36 through HTTP: the library by date (cursor pages, undated photos by file time, filters, the month jump
list), duplicate stacks in the library and in search (and the copy to keep, persisted), sort=date implying the
relevance cut-off, JPEG previews of formats browsers cannot show, and the favicon."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from api_fixtures import CAPTIONS, fake_engine_factory
from fastapi.testclient import TestClient
from photo_samples import heic, jpeg, write
from PIL import Image

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.query.pipeline import DEFAULT_Z

pytest_plugins = ("api_fixtures",)

LISBON = (38.7223, -9.1393)
DATED = {  # name → (folder, capture time)
    "beach.jpg": ("Lisbon", datetime(2024, 7, 14, 10, 0)),
    "tram.jpg": ("Lisbon", datetime(2024, 7, 2, 18, 30)),
    "snow.jpg": ("Alps", datetime(2024, 1, 5, 9, 0)),
    "cake.jpg": ("Home", datetime(2023, 12, 24, 20, 0)),
    "park.jpg": ("Home", datetime(2023, 5, 1, 15, 0)),
}


def _png(seed: int) -> bytes:
    from photo_samples import picture

    buffer = io.BytesIO()
    picture((80, 60), seed).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def photo_paths(tmp_path: Path) -> list[Path]:
    """Five dated JPEGs (two in Lisbon with GPS), a re-encoded smaller copy of the beach (a near-duplicate, same
    date), two undated PNG scans with known file times, and a 640x480 HEIC."""
    root = tmp_path / "library"
    paths = []
    for seed, (name, (folder, taken)) in enumerate(DATED.items(), start=1):
        extra: dict[str, Any] = {"gps": LISBON} if folder == "Lisbon" else {}
        paths.append(write(root / folder, name, jpeg((96, 72), seed=seed, taken=taken, **extra)))
    copy = jpeg((48, 36), seed=1, quality=60, taken=DATED["beach.jpg"][1], gps=LISBON)
    paths.append(write(root / "Lisbon" / "backup", "beach-copy.jpg", copy))
    for seed, (name, mtime) in enumerate([("scan-old.png", 1_500_000_000), ("scan-new.png", 1_600_000_000)], 20):
        path = write(root / "Scans", name, _png(seed))
        os.utime(path, (mtime, mtime))
        paths.append(path)
    paths.append(write(root / "Phone", "dinner.heic", heic((640, 480), seed=9, taken=datetime(2022, 3, 3, 20, 0))))
    return paths


@pytest.fixture
def client(service_settings: ServiceSettings, photo_paths: list[Path]) -> Iterator[TestClient]:
    # The fake image encoder's features are mean colours: distinct pictures are ~0.9 alike, copies ~1.0.
    settings = service_settings.model_copy(
        update={"query": service_settings.query.model_copy(update={"stack_threshold": 0.98})}
    )
    app = create_app(settings, fake_engine_factory(photo_paths, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def _walk(client: TestClient, **params: Any) -> list[dict[str, Any]]:
    """Every photo of the library, following next_cursor page by page."""
    photos: list[dict[str, Any]] = []
    cursor = None
    for _ in range(20):
        answer = client.get("/v1/library", params={**params, **({"cursor": cursor} if cursor else {})})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        photos += body["results"]
        cursor = body["next_cursor"]
        if cursor is None:
            return photos
    raise AssertionError("the cursor never ended")


def test_the_library_pages_newest_first_then_undated_by_file_time(client: TestClient) -> None:
    photos = _walk(client, k=3, stack="false")
    names = [p["metadata"]["filename"] for p in photos]
    assert len(names) == len(set(names)) == 9  # every photo once, across pages of 3
    assert names[:2] in (["beach.jpg", "beach-copy.jpg"], ["beach-copy.jpg", "beach.jpg"])  # same capture time
    assert names[2:] == ["tram.jpg", "snow.jpg", "cake.jpg", "park.jpg", "dinner.heic", "scan-new.png", "scan-old.png"]
    assert [p["date_source"] for p in photos] == ["taken"] * 7 + ["file"] * 2  # said so
    assert photos[-2]["date"] == datetime.fromtimestamp(1_600_000_000).isoformat()
    assert photos[-2]["preview_url"] == f"/v1/images/{photos[-2]['id']}/preview"
    first = client.get("/v1/library", params={"k": 3, "stack": "false"}).json()
    assert first["total_images"] == 9 and first["matching_images"] is None and first["stacked"] is False


def test_library_filters_and_month_jump(client: TestClient) -> None:
    photos = _walk(client, folder="Lisbon", taken_after="2024-07-10", stack="false")
    assert sorted(p["metadata"]["filename"] for p in photos) == ["beach-copy.jpg", "beach.jpg"]
    body = client.get("/v1/library", params={"near": "38.72,-9.14,5", "stack": "false"}).json()
    assert body["matching_images"] == 3 and body["filters"] == {"near": "38.72,-9.14,5.0"}
    # The jump list: months newest first, undated counted apart; stacked, the beach and its copy count once.
    months = client.get("/v1/library/months").json()
    assert [(m["month_param"], m["count"]) for m in months["months"]] == [
        ("2024-07", 2),
        ("2024-01", 1),
        ("2023-12", 1),
        ("2023-05", 1),
        ("2022-03", 1),
    ]
    assert months["undated"] == 2
    flat = client.get("/v1/library/months", params={"stack": "false"}).json()
    assert flat["months"][0]["count"] == 3
    # month=YYYY-MM starts at that month's newest photo; an empty month at the next older one.
    assert client.get("/v1/library", params={"month": "2023-12"}).json()["results"][0]["metadata"]["filename"] == (
        "cake.jpg"
    )
    assert client.get("/v1/library", params={"month": "9999-12", "k": 1}).json()["results"][0]["stack"]["count"] == 2
    jumped = client.get("/v1/library", params={"month": "2023-11", "k": 1}).json()
    assert jumped["results"][0]["metadata"]["filename"] == "park.jpg" and jumped["next_cursor"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"cursor": "nonsense"}, "next_cursor"),
        ({"cursor": "taken~~5"}, "next_cursor"),
        ({"month": "2024-13"}, "YYYY-MM"),
        ({"month": "2024-06", "cursor": "indexed~~5"}, "not both"),
        ({"taken_after": "yesterday"}, "ISO 8601"),
        ({"k": 0}, ""),
    ],
)
def test_library_refuses_bad_input(client: TestClient, params: dict[str, str], message: str) -> None:
    answer = client.get("/v1/library", params=params)
    assert answer.status_code == 422 and message in answer.text


def test_stacks_in_the_library_and_the_copy_to_keep(client: TestClient, service_settings: ServiceSettings) -> None:
    photos = _walk(client, k=4)
    names = [p["metadata"]["filename"] for p in photos]
    assert len(names) == 8 and names[0] in ("beach.jpg", "beach-copy.jpg")  # the pair shown once
    stack = photos[0]["stack"]
    assert stack["count"] == 2 and stack["kept"] is None and stack["ids"][0] == photos[0]["id"]
    other = stack["ids"][1]
    assert all(p["stack"] is None for p in photos[1:])
    # Keep the other copy: the stack shows it; the mark is in the index's database (a new app sees it).
    answer = client.put(f"/v1/duplicates/keep/{other}")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": other, "kept": True, "stack": [other, photos[0]["id"]]}
    top = client.get("/v1/library", params={"k": 1}).json()["results"][0]
    assert top["id"] == other and top["stack"]["kept"] == other
    kept = {
        i["id"]: i["kept"]
        for g in client.get("/v1/duplicates", params={"threshold": 0.98}).json()["groups"]
        for i in g["images"]
    }
    assert kept[other] is True and kept[photos[0]["id"]] is False
    assert client.put("/v1/duplicates/keep/999999").status_code == 404
    assert client.delete(f"/v1/duplicates/keep/{other}").json()["kept"] is False
    assert client.get("/v1/library", params={"k": 1}).json()["results"][0]["stack"]["kept"] is None


def test_search_stacks_and_sort_by_date_implies_the_cutoff(client: TestClient) -> None:
    plain = client.get("/v1/search", params={"q": "beach", "lang": "en", "k": 20}).json()
    assert len(plain["results"]) == 9 and plain["stacked"] is False and plain["cutoff"] is None
    stacked = client.get("/v1/search", params={"q": "beach", "lang": "en", "k": 20, "stack": "true"}).json()
    assert len(stacked["results"]) == 8 and stacked["stacked"] is True
    (pair,) = [r for r in stacked["results"] if r["stack"] is not None]
    assert pair["stack"]["count"] == 2 and pair["id"] in pair["stack"]["ids"]
    # sort=date: only what passes the relevance cut-off (implied), newest first; cutoff=off: the whole pool.
    by_date = client.get("/v1/search", params={"q": "beach", "lang": "en", "k": 20, "sort": "date"}).json()
    assert by_date["cutoff"] == DEFAULT_Z and 1 <= len(by_date["results"]) < 9
    every = client.get("/v1/search", params={"q": "beach", "lang": "en", "k": 20, "sort": "date", "cutoff": "off"})
    assert every.json()["cutoff"] is None and len(every.json()["results"]) == 9
    dates = [r["metadata"]["taken_at"] for r in every.json()["results"] if r["metadata"]["taken_at"]]
    assert dates == sorted(dates, reverse=True)


def test_heic_opens_as_a_cached_jpeg_preview(client: TestClient, service_settings: ServiceSettings) -> None:
    heic_id = next(p["id"] for p in _walk(client, stack="false") if p["metadata"]["filename"] == "dinner.heic")
    assert client.get(f"/v1/images/{heic_id}").headers["content-type"] == "image/heif"  # what Chromium cannot show
    answer = client.get(f"/v1/images/{heic_id}/preview")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/jpeg"
    preview = Image.open(io.BytesIO(answer.content))
    assert preview.format == "JPEG" and preview.size == (640, 480)  # medium size, not the 256-px thumbnail
    cached = service_settings.resolved_cache_dir / "thumbnails"
    made = {p.name: p.stat().st_mtime_ns for p in cached.glob("*_1600.jpg")}
    assert len(made) == 1  # made once …
    assert client.get(f"/v1/images/{heic_id}/preview").content == answer.content
    assert {p.name: p.stat().st_mtime_ns for p in cached.glob("*_1600.jpg")} == made  # … and served from the cache
    assert client.head(f"/v1/images/{heic_id}/preview").status_code == 200
    assert client.get("/v1/images/999999/preview").status_code == 404


def test_favicon(client: TestClient) -> None:
    answer = client.get("/favicon.ico")
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/x-icon"
    icon = Image.open(io.BytesIO(answer.content))
    assert icon.format == "ICO" and (32, 32) in icon.info["sizes"]
    assert 'rel="icon"' in client.get("/").text


def test_stacks_follow_the_library_without_making_a_request_wait(
    client: TestClient, photo_paths: list[Path], admin_headers: dict[str, str]
) -> None:
    """After the first search for duplicates, a change is taken in by a background search: the answer comes at
    once with the stacks it had (less removed photos), and a new copy is stacked a moment later."""
    from app.stacking import duplicate_stacks

    first = client.get("/v1/library", params={"k": 1}).json()["results"][0]
    cover, other = first["stack"]["ids"]
    tram = next(p for p in photo_paths if p.name == "tram.jpg")
    copy = io.BytesIO()
    Image.open(tram).resize((48, 36)).save(copy, "JPEG", quality=60, exif=Image.open(tram).getexif().tobytes())
    added = client.post("/v1/images", files={"file": ("tram-copy.jpg", copy.getvalue())}, headers=admin_headers)
    assert added.status_code == 201, added.text
    # Removed: the beach's cover; its other copy must not stay hidden behind a photo that is gone.
    assert client.delete(f"/v1/images/{cover}", headers=admin_headers).status_code == 200
    now = client.get("/v1/library", params={"k": 20}).json()["results"]
    assert other in [p["id"] for p in now]  # at once, from the groups it had
    duplicate_stacks(client.app.state.engine).wait(30)  # type: ignore[attr-defined]
    later = client.get("/v1/library", params={"k": 20}).json()["results"]
    stacked = {p["metadata"]["filename"]: p["stack"] for p in later if p["stack"]}
    assert list(stacked) == ["tram-copy.jpg"] and stacked["tram-copy.jpg"]["count"] == 2
    assert len(later) == 8  # 9 photos - the removed one + the copy, the tram and its copy as one


def test_raw_and_avif_open_as_previews(service_settings: ServiceSettings, tmp_path: Path) -> None:
    """A camera RAW (its embedded preview) and an AVIF come back as JPEGs at their own size (under 1600 px); a
    large JPEG at 1600 px on its longest side."""
    from photo_samples import avif, dng

    folder = tmp_path / "formats"
    raw = write(folder, "camera.dng", dng(jpeg((600, 400), seed=5), taken=datetime(2024, 5, 1, 8)))
    modern = write(folder, "modern.avif", avif((500, 300), seed=6))
    large = write(folder, "large.jpg", jpeg((2400, 1800), seed=7))
    with TestClient(create_app(service_settings, fake_engine_factory([raw, modern, large]))) as formats:
        photos = {p["metadata"]["filename"]: p for p in formats.get("/v1/library").json()["results"]}
        for name, size in (("camera.dng", (600, 400)), ("modern.avif", (500, 300)), ("large.jpg", (1600, 1200))):
            answer = formats.get(photos[name]["preview_url"])
            assert answer.status_code == 200 and answer.headers["content-type"] == "image/jpeg", name
            assert Image.open(io.BytesIO(answer.content)).size == size, name
        assert photos["modern.avif"]["date_source"] == "file" and photos["camera.dng"]["date_source"] == "taken"
