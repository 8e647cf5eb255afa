"""Issue 27's page in headless Chromium against a real server: the query and filters in the URL (shareable, back
button), the detail view with EXIF facts, tags and "similar photos", infinite scroll, and a phone-width layout."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from headless_chromium import CHROMIUM, MISSING, launch_chromium
from photo_samples import jpeg, write
from required_tools import tool_missing

pytest_plugins = ("api_fixtures",)
pytestmark = pytest.mark.browser

LISBON = (38.7223, -9.1393)


@pytest.fixture
def photo_paths(tmp_path: Path) -> list[Path]:
    """30 photos (more than a page of 24): 2023 and 2024, every third one in Lisbon with GPS and a camera."""
    paths = []
    for number in range(30):
        year = 2023 + number % 2
        place = "Lisbon" if number % 3 == 0 else "Home"
        extra = {"gps": LISBON, "make": "Apple", "model": "iPhone 15"} if place == "Lisbon" else {}
        data = jpeg((96, 72), seed=number, taken=datetime(year, 1 + number % 12, 1 + number, 12), **extra)
        paths.append(write(tmp_path / "library" / str(year) / place, f"photo{number:02d}.jpg", data))
    return paths


def _launch(sync_api, playwright, viewport):  # type: ignore[no-untyped-def]
    browser = launch_chromium(playwright)
    # bypass_csp: Playwright's wait_for_function evaluates its predicate with eval, which the page's CSP
    # (script-src 'self') forbids; the page's own script runs under that CSP (test_fault_files.py checks it).
    return browser, browser.new_page(viewport=viewport, bypass_csp=True)


@pytest.fixture
def pages():  # type: ignore[no-untyped-def]
    """A factory of pages at a given viewport (desktop or phone)."""
    if not CHROMIUM.exists():
        tool_missing(MISSING)
    from playwright import sync_api
    with sync_api.sync_playwright() as playwright:
        browsers = []

        def make(width: int = 1100, height: int = 800):  # type: ignore[no-untyped-def]
            browser, page = _launch(sync_api, playwright, {"width": width, "height": height})
            browsers.append(browser)
            return page

        try:
            yield make
        finally:
            for browser in browsers:
                browser.close()


def _query(page) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    return parse_qs(urlparse(page.url).query)


def test_url_state_filters_detail_view_and_back_button(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages()
    # A shared link: query, language and a date filter come from the URL and are searched at once.
    page.goto(live_server + "/?q=a+photo&lang=en&after=2024-01-01&folder=Lisbon")
    page.wait_for_selector(".card")
    assert page.input_value("#query") == "a photo" and page.input_value("#taken-after") == "2024-01-01"
    assert page.locator(".card").count() == 5  # odd numbers are 2024, every third one in Lisbon: 3, 9, 15, 21, 27
    assert "5 match the filters" in page.inner_text("#status")
    # Sort by date: a new history entry; the cards that stand out (sort=date implies the cut-off, issue 36) come
    # newest first, under their month's heading.
    page.select_option("#sort", "date")
    page.wait_for_function("location.search.includes('sort=date')")
    page.wait_for_function("document.getElementById('status').textContent.includes('stand out, newest first')")
    dates = page.locator(".card .date").all_inner_texts()
    assert 1 <= len(dates) <= 5 and dates == sorted(dates, reverse=True)
    assert page.locator(".month > h2").count() >= 1
    # Detail view: EXIF facts, tags (or why there are none), "photo" in the URL.
    page.locator(".card").first.click()
    page.wait_for_selector("#detail-facts dt")
    facts = page.inner_text("#detail-facts")
    assert f"{dates[0]} 12:00:00" in facts and "Apple iPhone 15" in facts and "38.72230, -9.13930" in facts
    assert "Lisbon" in facts and "96 × 72 px" in facts
    page.wait_for_function("document.getElementById('detail-tags').textContent.length > 0")
    assert "photo" in _query(page)
    # Back: the detail view closes; back again: the search before sorting.
    page.go_back()
    page.wait_for_function("!document.getElementById('detail').open")
    assert "photo" not in _query(page) and _query(page)["sort"] == ["date"]
    page.go_back()
    page.wait_for_function("!location.search.includes('sort=date')")
    page.wait_for_function("document.getElementById('sort').value === 'score'")
    page.wait_for_function("!document.querySelector('#results .month')")  # re-rendered: no date headings
    # Similar photos of an open photo: by id, in the URL.
    page.locator(".card").first.click()
    page.wait_for_selector("#detail[open]")
    page.click("#detail-similar")
    page.wait_for_function("document.getElementById('status').textContent.includes('visually similar')")
    assert "similar" in _query(page) and "q" not in _query(page)


def test_the_same_search_again_adds_no_history_entry(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages()
    page.goto(live_server + "/?q=a+photo&lang=en")
    page.wait_for_selector(".card")
    page.fill("#folder", "Lisbon")
    page.locator("#folder").press("Enter")  # the filter changed and the form submitted: one new entry
    page.wait_for_function("location.search.includes('folder=Lisbon')")
    page.locator("#query").press("Enter")  # the same search again: no new entry
    page.wait_for_function("document.querySelectorAll('.card').length === 10")
    page.go_back()  # one step back is the search before the filter, not a copy of this one
    page.wait_for_function("!location.search.includes('folder=')")
    page.wait_for_function("document.getElementById('folder').value === ''")


def test_place_filter_from_the_url_and_from_a_photo(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages()
    page.goto(live_server + "/?q=a+photo&lang=en&near=38.72,-9.14,5")  # a shared link with a place
    page.wait_for_selector(".card")
    assert page.input_value("#near") == "38.72,-9.14,5"
    assert page.locator(".card").count() == 10 and "10 match the filters" in page.inner_text("#status")
    page.goto(live_server + "/?q=a+photo&lang=en&after=2024-01-01")
    page.wait_for_selector(".card")
    assert page.locator(".card").count() == 15
    # From a photo taken in Lisbon: "photos within 5 km" sets the place filter and searches again.
    page.locator(".card:has(img[alt='photo03.jpg'])").click()  # 2024, Lisbon
    page.wait_for_selector("#detail-nearby")
    page.click("#detail-nearby")
    page.wait_for_function("location.search.includes('near=38.72230%2C-9.13930%2C5')")
    page.wait_for_function("document.getElementById('status').textContent.includes('5 match the filters')")
    assert page.evaluate("!document.getElementById('detail').open") and "photo" not in _query(page)
    assert _query(page)["after"] == ["2024-01-01"]  # the other filters stay
    page.go_back()
    page.wait_for_function("!location.search.includes('near=')")


def test_infinite_scroll_loads_the_next_page(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages(1100, 700)
    page.goto(live_server + "/?q=a+photo&lang=en")
    page.wait_for_selector(".card")
    page.wait_for_function("document.querySelectorAll('.card').length >= 24")
    page.mouse.wheel(0, 20000)
    page.wait_for_function("document.querySelectorAll('.card').length === 30")
    assert page.locator(".card").count() == 30 and page.is_hidden("#more")
    ranks = [int(text.strip("#")) for text in page.locator(".card .meta span:first-child").all_inner_texts()]
    assert ranks == list(range(1, 31))


def test_phone_layout(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    page = pages(390, 844)  # an iPhone's CSS viewport
    page.goto(live_server + "/?q=a+photo&lang=en")
    page.wait_for_selector(".card")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the screen
    grid = "document.querySelector('.grid') || document.getElementById('results')"  # before issue 36: #results
    assert page.evaluate(f"getComputedStyle({grid}).gridTemplateColumns.split(' ').length") == 2
    page.locator(".card").first.click()
    page.wait_for_selector("#detail-facts dt")
    page.wait_for_function("document.getElementById('detail-image').complete")
    assert_fits_the_screen(page, "#detail", 390, 844)
    image, text = page.locator("#detail-image").bounding_box(), page.locator(".detail-text").bounding_box()
    assert image is not None and text is not None and text["y"] >= image["y"] + image["height"] - 1  # stacked
    page.click("#detail .close")
    page.wait_for_function("!document.getElementById('detail').open")
    assert not page.is_visible("#filters")  # folded on a phone (issue 36) …
    page.click("#filters-box summary")
    assert page.is_visible("#folder")  # … and unfolded with a tap


def assert_fits_the_screen(page, dialog: str, width: int, height: int) -> None:  # type: ignore[no-untyped-def]
    """Issue 36: the dialog is no wider than the screen, nothing in it sticks out sideways (the photo, captions,
    facts), and its close button is on screen and the topmost thing where it is (a tap reaches it)."""
    box = page.locator(dialog).bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width + 0.5, box
    overflow = page.evaluate(
        """(selector) => {
            const dialog = document.querySelector(selector);
            const out = [...dialog.querySelectorAll('*')].filter((e) => {
                const r = e.getBoundingClientRect();
                return r.width > 0 && (r.left < -0.5 || r.right > window.innerWidth + 0.5);
            }).map((e) => `${e.tagName}#${e.id}.${e.className} ${Math.round(e.getBoundingClientRect().right)}`);
            return {out, scroll: dialog.scrollWidth, client: dialog.clientWidth,
                    page: document.documentElement.scrollWidth};
        }""",
        dialog,
    )
    assert overflow["out"] == [] and overflow["scroll"] <= overflow["client"] and overflow["page"] <= width, overflow
    close = page.locator(f"{dialog} .close").bounding_box()
    assert close is not None and close["x"] >= 0 and close["y"] >= 0, close
    assert close["x"] + close["width"] <= width and close["y"] + close["height"] <= height, close
    on_top = page.evaluate(
        """(selector) => {
            const button = document.querySelector(selector + ' .close');
            const r = button.getBoundingClientRect();
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return hit === button || button.contains(hit);
        }""",
        dialog,
    )
    assert on_top


def test_tags_come_in_the_language_of_the_last_query(live_server: str, pages) -> None:  # type: ignore[no-untyped-def]
    """Issue 35: the detail view's tags are in the chosen language, else the last query's, else the browser's."""
    page = pages()
    page.goto(live_server + "/?q=" + "un chien qui court sur la plage avec une balle rouge".replace(" ", "+"))
    page.wait_for_selector(".card")
    assert "detected fr" in page.inner_text("#status")
    page.locator(".card").first.click()
    page.wait_for_function("document.querySelectorAll('#detail-tags li').length > 0")
    assert page.inner_text("#detail-tags-lang") == "(fr)"
    scores = [
        float(t.split(" · ")[1]) for t in page.eval_on_selector_all("#detail-tags li", "l => l.map(e => e.title)")
    ]
    assert scores == sorted(scores, reverse=True)  # best first
    page.go_back()
    page.select_option("#lang", "de")  # chosen in the search box: it wins over the detected language
    page.locator("#query").press("Enter")
    page.wait_for_function("location.search.includes('lang=de')")
    page.locator(".card").first.click()
    page.wait_for_function("document.getElementById('detail-tags-lang').textContent === '(de)'")
    # A link straight to a photo, no query: the browser's language (Accept-Language).
    spanish = page.context.browser.new_page(locale="es-ES", bypass_csp=True)
    photo = _query(page)["photo"][0]
    spanish.goto(f"{live_server}/?photo={photo}")
    spanish.wait_for_function("document.getElementById('detail-tags-lang').textContent === '(es)'")
    assert spanish.locator("#detail-tags li").count() > 0
