"""The web page end to end in headless Chromium (Debian's /usr/bin/chromium driven by Playwright) against a
real uvicorn server: a French query shows results, a click shows captions, dropping an image searches by it."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from headless_chromium import CHROMIUM, MISSING, launch_chromium
from required_tools import tool_missing

pytest_plugins = ("api_fixtures",)
pytestmark = pytest.mark.browser


@pytest.fixture
def browser_page():
    if not CHROMIUM.exists():
        tool_missing(MISSING)
    from playwright import sync_api
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            # bypass_csp: Playwright's wait_for_function evaluates its predicate with eval, which the page's CSP
            # (script-src 'self') forbids. The page's own script runs under that CSP (both tests passed with it
            # enforced, up to this eval); test_fault_files.py checks the headers.
            yield browser.new_page(viewport={"width": 1100, "height": 800}, bypass_csp=True)
        finally:
            browser.close()


def test_french_query_shows_results_and_captions(live_server: str, browser_page, photo_paths: list[Path]) -> None:
    page = browser_page
    page.goto(live_server + "/")
    page.wait_for_selector("#lang option[value='fr']", state="attached")
    page.select_option("#lang", "fr")
    page.fill("#query", "un chien qui court sur la plage")
    page.click("button[type=submit]")
    # The page opened on the library (cards without scores); the search replaces them.
    page.wait_for_function("document.getElementById('status').textContent.includes('results of')")
    cards = page.locator(".card")
    assert cards.count() == 8
    scores = [float(text) for text in page.locator(".card .score").all_inner_texts()]
    assert scores == sorted(scores, reverse=True)
    assert "8 results of 8 images" in page.inner_text("#status")
    # Thumbnails actually load (the browser decoded them).
    page.wait_for_function("[...document.querySelectorAll('.card img')].every(i => i.complete && i.naturalWidth > 0)")

    cards.first.click()
    page.wait_for_selector("#detail-captions li")
    captions = page.locator("#detail-captions li").all_inner_texts()
    assert len(captions) == 2 and any("chien" in c or "enfants" in c for c in captions)
    assert page.inner_text("#detail-lang") == "(fr)"
    page.click("#detail .close")

    # Drag-and-drop an image file onto the drop zone: the page searches by image.
    data = base64.b64encode(photo_paths[1].read_bytes()).decode()
    page.evaluate(
        """([b64, name]) => {
            const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
            const transfer = new DataTransfer();
            transfer.items.add(new File([bytes], name, {type: "image/png"}));
            document.getElementById("drop").dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
        }""",
        [data, photo_paths[1].name],
    )
    page.wait_for_function("document.getElementById('status').textContent.includes('visually similar')")
    assert page.locator(".card").count() == 8


def test_unsupported_input_shows_an_error(live_server: str, browser_page) -> None:
    page = browser_page
    page.goto(live_server + "/")
    page.wait_for_selector("#lang option[value='fr']", state="attached")
    page.fill("#query", "x" * 300)  # over the service's query limit (200 in the fixture); the box allows 500
    page.click("button[type=submit]")
    page.wait_for_selector("#status.error")
    assert "query too long" in page.inner_text("#status")
