"""Screenshots of the photo-library page (issue 27) against real photos, for the README.

Copies ``--photos`` dev photos into a library of three folders (Lisbon, Porto, Home) with EXIF capture dates over
2023–2024, GPS positions and a camera (re-saved as JPEG q92), indexes them with the configured models into a
scratch index, indexes the dev captions (as benchmarks/screenshot.py does), starts the service on loopback and
saves, from headless Chromium: a filtered French query sorted by date, the detail view of its first result, and
the same page at phone width::

    .venv/bin/python benchmarks/screenshot_library.py

Writes docs/screenshot-library-search.jpg, docs/screenshot-library-detail.jpg, docs/screenshot-library-phone.jpg.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from headless_chromium import launch_chromium
from load_search import start_server
from photo_samples import exif_bytes
from PIL import Image
from screenshot import DATA, ROOT, index_dev_captions

PLACES = {"Lisbon": (38.7223, -9.1393), "Porto": (41.1579, -8.6291), "Home": None}


def make_library(folder: Path, count: int) -> list[Path]:
    dev = (DATA / "splits" / "dev.txt").read_text().split()[:count]
    out = []
    for number, name in enumerate(dev):
        place = list(PLACES)[number % 3]
        taken = datetime(2023, 1, 1, 10) + timedelta(days=number * 3, hours=number % 9)
        exif = exif_bytes(taken=taken, offset="+01:00", gps=PLACES[place], make="Apple", model="iPhone 15")
        target = folder / str(taken.year) / place / name
        target.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        Image.open(DATA / "images" / name).convert("RGB").save(buffer, "JPEG", quality=92, exif=exif)
        target.write_bytes(buffer.getvalue())
        out.append(target)
    return out


def shoot(page, path: Path) -> None:  # type: ignore[no-untyped-def]
    page.screenshot(path=str(path), type="jpeg", quality=80)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=int, default=240)
    parser.add_argument("--query", default="un chien court dans l'herbe")
    parser.add_argument("--lang", default="fr")
    parser.add_argument("--captions-dir", type=Path, default=ROOT / "var" / "screenshot-captions")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs")
    args = parser.parse_args()

    from indexer.image_index import ImageIndex
    from indexer.settings import Settings

    scratch = Path(tempfile.mkdtemp(prefix="screenshot-library-"))
    try:
        photos = make_library(scratch / "library", args.photos)
        settings = Settings(index_dir=scratch / "index")
        with ImageIndex.open(settings) as index:
            print("indexed", index.add_paths(photos, progress=False).added, flush=True)
        index_dev_captions(args.captions_dir, None)
        # A French tag vocabulary from the dev captions, for the detail view's tags.
        french = scratch / "fr.jsonl"
        french.write_text(
            "".join(
                line + "\n" for line in (DATA / "captions.jsonl").read_text().splitlines() if '"lang": "fr"' in line
            )
        )
        vocab_env = {**os.environ, "POLYGLOT_INDEX_DIR": str(scratch / "index")}
        polyglot = str(Path(sys.executable).parent / "polyglot")
        command = [polyglot, "tags", "vocab", "build", "--lang", "fr", "--max-words", "3000"]
        subprocess.run([*command, str(french)], check=True, env=vocab_env, cwd=ROOT)
        env = {
            **os.environ,
            "POLYGLOT_CAPTIONS_DIR": str(args.captions_dir),
            "POLYGLOT_INDEX_DIR": str(scratch / "index"),
        }
        server, url, _ = start_server(env)
        try:
            from playwright.sync_api import sync_playwright

            query = f"?q={args.query}&lang={args.lang}&after=2024-01-01&sort=date"
            with sync_playwright() as playwright:
                browser = launch_chromium(playwright)
                page = browser.new_page(viewport={"width": 1280, "height": 900}, bypass_csp=True)
                page.goto(url + "/" + query + "&cutoff=auto")
                page.wait_for_selector(".card")
                page.wait_for_function("[...document.querySelectorAll('.card img')].every(i => i.complete)")
                args.out_dir.mkdir(parents=True, exist_ok=True)
                shoot(page, args.out_dir / "screenshot-library-search.jpg")
                page.locator(".card").first.click()
                page.wait_for_selector("#detail-facts dt")
                page.wait_for_selector("#detail-captions li")
                page.wait_for_function("document.getElementById('detail-tags').textContent.length > 0")
                page.wait_for_function("document.getElementById('detail-image').complete")
                shoot(page, args.out_dir / "screenshot-library-detail.jpg")
                phone = browser.new_page(viewport={"width": 390, "height": 844}, device_scale_factor=2, bypass_csp=True)
                phone.goto(url + "/" + query + "&cutoff=auto")
                phone.wait_for_selector(".card")
                phone.wait_for_function(
                    "[...document.querySelectorAll('.card img')].slice(0, 8).every(i => i.complete)"
                )
                shoot(phone, args.out_dir / "screenshot-library-phone.jpg")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("wrote", *(args.out_dir / f"screenshot-library-{n}.jpg" for n in ("search", "detail", "phone")))


if __name__ == "__main__":
    main()
