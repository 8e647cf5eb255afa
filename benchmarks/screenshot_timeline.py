"""Screenshots of the library view (issue 36) against real photos and the configured models, for the README.

The library of ``benchmarks/screenshot_library.py`` (``--photos`` dev photos in Lisbon, Porto and Home with EXIF
dates, GPS and a camera), plus what a phone library holds: a re-encoded copy of the newest photo (a
near-duplicate: stacked), one photo as HEIC, and three undated PNG scans. Indexes them into a scratch index,
starts the service on loopback and saves, from headless Chromium: the page as it opens at 1280x900 (newest first,
by month and day, the stack unfolded), the same at 390x844, and the HEIC's detail view on the phone::

    .venv/bin/python benchmarks/screenshot_timeline.py

Writes docs/screenshot-library-timeline.jpg, docs/screenshot-library-timeline-phone.jpg and
docs/screenshot-library-detail-phone.jpg.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from headless_chromium import launch_chromium
from load_search import start_server
from PIL import Image
from screenshot import DATA, ROOT
from screenshot_library import make_library, shoot

# Every thumbnail on screen has loaded (lazy ones below the fold never start).
VISIBLE_LOADED = (
    "[...document.querySelectorAll('.card img')].filter(i => i.getBoundingClientRect().top < innerHeight)"
    ".every(i => i.complete && i.naturalWidth > 0)"
)


def phone_extras(folder: Path, photos: list[Path]) -> list[Path]:
    """A near-duplicate of the newest photo, one photo as HEIC (the original removed), three undated scans."""
    import pillow_heif

    pillow_heif.register_heif_opener()
    newest = max(photos, key=lambda p: str(Image.open(p).getexif().get_ifd(0x8769).get(0x9003)))
    original = Image.open(newest)
    copy = folder / "backup" / f"copy-{newest.name}"
    copy.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    original.save(buffer, "JPEG", quality=60, exif=original.getexif().tobytes())  # a re-encoded copy
    copy.write_bytes(buffer.getvalue())
    second = sorted(photos)[1]
    heic = second.with_suffix(".heic")
    picture = Image.open(second)
    picture.save(heic, "HEIF", quality=85, exif=picture.getexif().tobytes())
    second.unlink()
    extras = [copy, heic]
    scans = folder / "Scans"
    scans.mkdir(parents=True, exist_ok=True)
    unused = (DATA / "splits" / "dev.txt").read_text().split()[len(photos) : len(photos) + 3]  # not in the library
    for number, name in enumerate(unused):
        scan = scans / f"scan-{number}.png"
        Image.open(DATA / "images" / name).convert("RGB").save(scan, "PNG")  # a PNG without EXIF: no capture date
        os.utime(scan, (1_600_000_000 + number * 86_400, 1_600_000_000 + number * 86_400))
        extras.append(scan)
    return [p for p in photos if p != second] + extras


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=int, default=120)
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs")
    args = parser.parse_args()

    from indexer.image_index import ImageIndex
    from indexer.settings import Settings

    scratch = Path(tempfile.mkdtemp(prefix="screenshot-timeline-"))
    try:
        photos = phone_extras(scratch / "library", make_library(scratch / "library", args.photos))
        settings = Settings(index_dir=scratch / "index", cache_dir=scratch / "cache")
        with ImageIndex.open(settings) as index:
            print("indexed", index.add_paths(photos, progress=False).added, flush=True)
        env = {**os.environ, "POLYGLOT_INDEX_DIR": str(scratch / "index"), "POLYGLOT_CACHE_DIR": str(scratch / "cache")}
        server, url, _ = start_server(env)
        try:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as playwright:
                browser = launch_chromium(playwright)
                page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
                page.goto(url + "/")
                page.wait_for_selector(".card")
                page.wait_for_selector(".card .stack-badge")
                page.click(".stack-badge")
                page.wait_for_selector(".card.member")
                page.wait_for_function(VISIBLE_LOADED)
                args.out_dir.mkdir(parents=True, exist_ok=True)
                shoot(page, args.out_dir / "screenshot-library-timeline.jpg")
                phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, bypass_csp=True)
                phone.goto(url + "/")
                phone.wait_for_selector(".card")
                phone.wait_for_function(VISIBLE_LOADED)
                shoot(phone, args.out_dir / "screenshot-library-timeline-phone.jpg")
                import httpx

                every = httpx.get(url + "/v1/library", params={"k": 500, "stack": "false"}).json()["results"]
                heic_id = next(p["id"] for p in every if p["metadata"]["filename"].endswith(".heic"))
                phone.goto(f"{url}/?photo={heic_id}")  # a shared link to the photo
                phone.wait_for_selector("#detail-facts dt")
                phone.wait_for_function(
                    "document.getElementById('detail-image').complete && document.getElementById('detail-image').naturalWidth > 0"
                )
                shoot(phone, args.out_dir / "screenshot-library-detail-phone.jpg")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        "wrote", *(args.out_dir / f"screenshot-library-{n}.jpg" for n in ("timeline", "timeline-phone", "detail-phone"))
    )


if __name__ == "__main__":
    main()
