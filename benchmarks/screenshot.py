"""Screenshots of the web page against the real collection (headless Chromium), for docs/.

Starts the service on a free loopback port with the configured index (``POLYGLOT_INDEX_DIR``, default
var/index) and tower, with the dev-split captions indexed into ``--captions-dir``, types a French query and
saves the result grid, then opens the first result and saves the image with its best French captions::

    .venv/bin/python benchmarks/screenshot.py --query "un chien court dans l'herbe"

Writes docs/screenshot-search.png and docs/screenshot-captions.png, and both again at phone size (390x844,
``…-phone.png``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the shared helpers: headless_chromium

from headless_chromium import launch_chromium
from load_search import start_server

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "m30k-f8k"


def index_dev_captions(captions_dir: Path, tower: Path | None) -> None:
    from app.cli.captions_cmd import load_embedder
    from app.service_settings import ServiceSettings
    from indexer.captions import CaptionIndex, read_captions

    settings = ServiceSettings(captions_dir=captions_dir, tower_path=tower)
    dev = set((DATA / "splits" / "dev.txt").read_text().split())
    rows = [c for c in read_captions(DATA / "captions.jsonl") if c.image in dev]
    index = CaptionIndex.open(captions_dir, load_embedder(settings), settings.resolved_cache_dir)
    try:
        print(f"captions: added {index.add(rows)}, {len(index)} in total", flush=True)
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tower", type=Path, help="POLYGLOT_TOWER_PATH; default the shipped tower.")
    parser.add_argument("--query", default="un chien court dans l'herbe")
    parser.add_argument("--lang", default="fr")
    parser.add_argument("--captions-dir", type=Path, default=ROOT / "var" / "screenshot-captions")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "docs")
    args = parser.parse_args()

    index_dev_captions(args.captions_dir, args.tower)
    env = {**os.environ, "POLYGLOT_CAPTIONS_DIR": str(args.captions_dir)}
    if args.tower:
        env["POLYGLOT_TOWER_PATH"] = str(args.tower)
    server, url, _ = start_server(env)
    written: list[Path] = []
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            args.out_dir.mkdir(parents=True, exist_ok=True)
            # The page's Content-Security-Policy forbids eval, which wait_for_function's string predicates use.
            for viewport, suffix in (({"width": 1280, "height": 900}, ""), ({"width": 390, "height": 844}, "-phone")):
                page = browser.new_page(viewport=viewport, bypass_csp=True)
                page.goto(url + "/")
                page.wait_for_selector(f"#lang option[value='{args.lang}']", state="attached")
                page.select_option("#lang", args.lang)
                page.fill("#query", args.query)
                page.click("button[type=submit]")
                page.wait_for_selector(".card")
                page.wait_for_function(
                    "[...document.querySelectorAll('.card img')].slice(0, 18).every(i => i.complete && i.naturalWidth > 0)"
                )
                written.append(args.out_dir / f"screenshot-search{suffix}.png")
                page.screenshot(path=str(written[-1]))
                page.locator(".card").first.click()
                page.wait_for_selector("#detail-captions li")
                page.wait_for_function("document.getElementById('detail-image').complete")
                # Tags arrive on their own request (the first one embeds the tag vocabulary): wait for the list.
                page.wait_for_function("document.getElementById('detail-tags').textContent.length > 0")
                written.append(args.out_dir / f"screenshot-captions{suffix}.png")
                page.screenshot(path=str(written[-1]))
                page.close()
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print("wrote", *written)


if __name__ == "__main__":
    main()
