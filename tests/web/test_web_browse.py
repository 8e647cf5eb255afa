"""Issue 36's page in headless Chromium against a real server: it opens on the library (newest first, by day and
month, a year/month jump, infinite scroll), fills a tall screen, stacks near-duplicates (expand, keep a copy),
shows a HEIC photo as a JPEG preview, and fits a phone (the detail view, its ×, folded filters)."""

from __future__ import annotations

import io
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from headless_chromium import CHROMIUM, MISSING, launch_chromium
from photo_samples import heic, jpeg, picture, write
from required_tools import tool_missing
from test_web_library import assert_fits_the_screen

from app.service_settings import ServiceSettings

pytest_plugins = ("api_fixtures",)
pytestmark = pytest.mark.browser


def _png(seed: int) -> bytes:
    buffer = io.BytesIO()
    picture((80, 60), seed).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def photo_paths(tmp_path: Path) -> list[Path]:
    """46 photos: 40 dated JPEGs over 2023-2024 (two a month), a smaller re-encoded copy of the newest (a
    near-duplicate), a 640x480 HEIC, and four undated PNG scans with known file times."""
    root = tmp_path / "library"
    paths = []
    for number in range(40):
        taken = datetime(2023 + number // 20, 1 + (number % 20) // 2, 1 + number % 20, 9 + number % 2)
        paths.append(write(root / str(taken.year), f"photo{number:02d}.jpg", jpeg((96, 72), seed=number, taken=taken)))
    newest = datetime(2024, 10, 20, 10)
    copy = jpeg((48, 36), seed=39, quality=60, taken=newest)
    paths.append(write(root / "backup", "photo39-copy.jpg", copy))
    paths.append(write(root / "iphone13", "dinner.heic", heic((640, 480), seed=77, taken=datetime(2022, 3, 3, 20))))
    for number in range(4):
        path = write(root / "scans", f"scan{number}.png", _png(100 + number))
        os.utime(path, (1_500_000_000 + number * 86_400 * 40, 1_500_000_000 + number * 86_400 * 40))
        paths.append(path)
    return paths


@pytest.fixture
def service_settings(service_settings: ServiceSettings) -> ServiceSettings:
    # Distinct pictures of the fake encoder are ~0.9 alike, a resized copy ~1.0: stack at 0.98.
    return service_settings.model_copy(
        update={"query": service_settings.query.model_copy(update={"stack_threshold": 0.98})}
    )


@pytest.fixture
def pages():  # type: ignore[no-untyped-def]
    if not CHROMIUM.exists():
        tool_missing(MISSING)
    from playwright import sync_api
    with sync_api.sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            # bypass_csp: Playwright's wait_for_function evaluates with eval, which the page's CSP forbids.
            yield lambda width, height: browser.new_page(viewport={"width": width, "height": height}, bypass_csp=True)
        finally:
            browser.close()


def _card_ids(page: Any) -> list[int]:  # the photos shown, members of an unfolded stack left out
    return [int(i) for i in page.eval_on_selector_all(".card:not(.member)", "cards => cards.map(c => c.dataset.id)")]


def test_the_page_opens_on_the_library_by_day_and_month(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    import httpx

    page = pages(1280, 900)
    page.goto(live_server + "/")
    page.wait_for_function("document.querySelectorAll('.card').length >= 40")
    assert page.locator(".month > h2").first.inner_text() == "October 2024"
    assert page.locator(".month h3.day").first.inner_text() == "Sunday 20 October 2024"
    # Newest first, the API's order; the near-duplicate pair stacked as one card with a count.
    expected = [p["id"] for p in httpx.get(live_server + "/v1/library", params={"k": 100}).json()["results"]]
    assert len(expected) == 45
    page.mouse.wheel(0, 50_000)  # infinite scroll: the last page comes (pages of 40)
    page.wait_for_function("document.querySelectorAll('.card:not(.member)').length === 45")
    assert _card_ids(page) == expected
    assert "45 of 46 photos, newest first" in page.inner_text("#status")
    headings = page.locator(".month > h2").all_inner_texts()
    assert headings[-1].startswith("No capture date · file time") and "March 2022" in headings
    # The jump list: months with photos, by year; a month starts the page at its newest photo.
    options = page.eval_on_selector_all("#jump option", "o => o.map(x => x.value)")
    assert options[:3] == ["", "2024-10", "2024-09"] and "2022-03" in options
    page.select_option("#jump", "2023-05")
    page.wait_for_function("location.search.includes('month=2023-05')")
    page.wait_for_function("document.querySelector('.month > h2').textContent === 'May 2023'")
    page.go_back()
    page.wait_for_function("document.querySelector('.month > h2').textContent === 'October 2024'")
    # Filters apply to the library: a folder.
    page.fill("#folder", "scans")
    page.locator("#folder").press("Enter")
    page.wait_for_function("document.querySelectorAll('.card').length === 4")
    assert "4 match the filters" in page.inner_text("#status")


def test_stacks_unfold_and_a_copy_is_kept(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages(1280, 900)
    page.goto(live_server + "/")
    page.wait_for_selector(".card .stack-badge")
    (badge,) = page.locator(".stack-badge").all()
    assert badge.inner_text() == "2 copies"
    cover = page.locator(".card:has(.stack-badge)").get_attribute("data-id")
    badge.click()
    page.wait_for_selector(".card.member")
    member = page.locator(".card.member").get_attribute("data-id")
    assert member != cover
    page.locator(".card.member .open").click()
    page.wait_for_selector("#detail-stack:not([hidden])")
    assert "No copy is marked" in page.inner_text("#detail-stack")
    page.click("#detail-keep")
    page.wait_for_function("document.getElementById('status').textContent.includes('is the copy to keep')")
    page.keyboard.press("Escape")
    # Reloaded: the kept copy is the stack's cover (persisted by the server).
    page.reload()
    page.wait_for_selector(".card .stack-badge")
    assert page.locator(".card:has(.stack-badge)").get_attribute("data-id") == member
    # In search results too: the pair is one result.
    page.goto(live_server + "/?q=a+photo&lang=en")
    page.wait_for_function("document.querySelectorAll('.card').length === 45")  # pages of 24 fill the screen
    assert page.locator(".stack-badge").count() == 1


def test_a_tall_screen_fills_with_results(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    """Pages of 24 that do not reach the bottom of a 1280x900 screen: the next ones load without a scroll (the
    page stopped at 24 of 46 before issue 36)."""
    page = pages(1280, 900)
    page.goto(live_server + "/?q=a+photo&lang=en")
    page.wait_for_function("document.querySelectorAll('.card').length === 45", timeout=15_000)
    assert page.is_hidden("#more")


def test_phone_heic_preview_and_favicon(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages(390, 844)
    page.goto(
        live_server + "/?folder=iphone13"
    )  # a word no temporary path holds: folder= matches the start of any word of a path
    page.wait_for_selector(".card")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert page.is_visible("#folder")  # a filter is set: the filters show what is applied
    page.locator(".card").first.click()
    # The HEIC opens as the server's JPEG preview, at its own 640 px (not the 256-px thumbnail).
    page.wait_for_function("document.getElementById('detail-image').naturalWidth === 640")
    assert page.get_attribute("#detail-image", "src").endswith("/preview")
    page.wait_for_selector("#detail-facts dt")
    assert_fits_the_screen(page, "#detail", 390, 844)
    page.click("#detail .close")
    page.wait_for_function("!document.getElementById('detail').open")
    page.goto(live_server + "/")
    page.wait_for_selector(".card")
    assert not page.is_visible("#filters")  # no filter: folded on a phone
    icon = page.goto(live_server + "/favicon.ico")
    assert icon is not None and icon.status == 200 and icon.headers["content-type"] == "image/x-icon"
