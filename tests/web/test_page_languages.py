"""The page in the browser's language (issue 59), in headless Chromium against a real server: a French, Japanese
and Arabic browser at 1280x900 and 390x844 get no English label (visible text and text attributes checked against
the English catalogue), Arabic is right-to-left, the query box follows its text (dir=auto), days and counts are
written by Intl, a one-word query takes the page's language for its tags, and the language chosen in the page is
remembered. POLYGLOT_SCREENSHOT_DIR set: each language and size is saved there as page-<lang>-<size>.jpg."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path

import pytest
from headless_chromium import CHROMIUM, MISSING, launch_chromium
from photo_samples import jpeg, write
from required_tools import tool_missing

pytest_plugins = ("api_fixtures",)
pytestmark = pytest.mark.browser

CATALOGUES = Path(__file__).resolve().parents[2] / "app" / "static" / "i18n"
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
# A browser language, and a one-word query in it (too short for the detector to be sure of its language).
BROWSERS = {"fr": ("fr-FR", "plage"), "ja": ("ja-JP", "海辺"), "ar": ("ar-EG", "شاطئ")}
PLACEHOLDER = re.compile(r"\{\w+\}")
LISBON = (38.7223, -9.1393)
NEWEST = datetime(2024, 7, 14, 18)
SCREENSHOTS = os.environ.get("POLYGLOT_SCREENSHOT_DIR")  # read before the fixtures clear POLYGLOT_* variables

# What a person reads: text of rendered elements, and the placeholders, titles and labels of the controls.
VISIBLE_TEXT = """() => {
    const texts = [document.body.innerText, document.title];
    for (const e of document.querySelectorAll('[placeholder], [title], [aria-label], option, optgroup')) {
        texts.push(e.getAttribute('placeholder') || '', e.getAttribute('title') || '',
                   e.getAttribute('aria-label') || '', e.tagName === 'OPTION' ? e.textContent : '');
    }
    return texts.join('\\n');
}"""


def _messages(code: str) -> dict[str, list[str]]:
    data = json.loads((CATALOGUES / f"{code}.json").read_text(encoding="utf-8"))
    return {key: list(value.values()) if isinstance(value, dict) else [value] for key, value in data.items()}


def english_left(text: str, code: str) -> list[str]:
    """English labels in ``text`` that the ``code`` catalogue writes differently: each English form's longest
    fixed part (between placeholders) of two letters or more, as a whole word or phrase."""
    english, translated = _messages("en"), _messages(code)
    for key, forms in english.items():
        if forms == translated[key]:  # the brand ("Polyglot Image Search") is the same in every language
            for form in forms:
                text = text.replace(form, "")
    found = []
    for key, forms in english.items():
        if forms == translated[key]:
            continue
        for form in forms:
            parts = sorted((p.strip(" ·:,()…") for p in PLACEHOLDER.split(form)), key=len, reverse=True)
            if any(parts[0] in own for own in translated[key]):
                continue  # a unit the language writes the same: "px"
            if len(parts[0]) >= 2 and re.search(rf"(?<!\w){re.escape(parts[0])}(?!\w)", text):
                found.append(f"{key}: {parts[0]!r}")
    return found


@pytest.fixture
def photo_paths(tmp_path: Path) -> list[Path]:
    """12 photos of July 2024 in Lisbon (GPS, a camera), the newest on Sunday 14 July."""
    return [
        write(
            tmp_path / "library" / "2024" / "Lisbon",
            f"photo{number:02d}.jpg",
            jpeg(
                (96, 72),
                seed=number,
                taken=NEWEST.replace(day=14 - number),
                gps=LISBON,
                make="Apple",
                model="iPhone 15",
            ),
        )
        for number in range(12)
    ]


@pytest.fixture
def browser():  # type: ignore[no-untyped-def]
    if not CHROMIUM.exists():
        tool_missing(MISSING)
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        try:
            yield chromium
        finally:
            chromium.close()


def _open(browser, locale: str, size: str):  # type: ignore[no-untyped-def]
    width, height = SIZES[size]
    # bypass_csp: Playwright's wait_for_function evaluates with eval, which the page's CSP forbids.
    return browser.new_page(viewport={"width": width, "height": height}, locale=locale, bypass_csp=True)


def _shoot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.jpg"), type="jpeg", quality=70)


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("code", sorted(BROWSERS))
def test_the_page_speaks_the_browsers_language(live_server: str, browser, code: str, size: str) -> None:  # type: ignore[no-untyped-def]
    locale, word = BROWSERS[code]
    page = _open(browser, locale, size)
    page.goto(live_server + "/")
    page.wait_for_selector(".card")
    page.wait_for_function("document.getElementById('status').textContent.length > 0")
    assert page.evaluate("document.documentElement.lang") == code
    assert page.evaluate("document.documentElement.dir") == ("rtl" if code == "ar" else "ltr")
    assert page.get_attribute("#query", "dir") == "auto"
    assert page.input_value("#ui-lang") == code
    if not page.is_visible("#folder"):
        page.click("#filters-box summary")  # folded on a phone: unfolded, its labels are read too
    assert page.evaluate("document.documentElement.scrollWidth") <= SIZES[size][0]
    # The day headings are Intl's, in the page's language: "dimanche 14 juillet 2024", "2024年7月14日日曜日".
    day = page.locator(".month h3.day").first.inner_text()
    assert day == page.evaluate(
        "(code) => new Intl.DateTimeFormat(code, {weekday: 'long', day: 'numeric', month: 'long', year: 'numeric',"
        " timeZone: 'UTC'}).format(Date.UTC(2024, 6, 14))",
        code,
    )
    assert "2024" in day or "٢٠٢٤" in day
    assert english_left(page.evaluate(VISIBLE_TEXT), code) == []
    _shoot(page, f"page-{code}-{size}")

    # A one-word query: the cut-off on (Show all one click away), no English in the status line, the detail view
    # in the page's language, its tags too.
    page.fill("#query", word)
    page.locator("#query").press("Enter")
    page.wait_for_function("location.search.includes('q=') && !document.getElementById('show-all').hidden")
    assert page.is_checked("#cutoff")
    page.locator(".card").first.click()
    page.wait_for_selector("#detail-facts dt")
    page.wait_for_function("document.querySelectorAll('#detail-tags li').length > 0")
    assert page.inner_text("#detail-tags-lang") == f"({code})"
    assert english_left(page.evaluate(VISIBLE_TEXT), code) == []
    _shoot(page, f"page-{code}-{size}-detail")


def test_the_language_chosen_in_the_page_is_remembered(live_server: str, browser) -> None:  # type: ignore[no-untyped-def]
    page = _open(browser, "en-US", "desktop")
    page.goto(live_server + "/")
    page.wait_for_selector(".card")
    assert page.input_value("#ui-lang") == "en" and page.evaluate("document.documentElement.dir") == "ltr"
    page.select_option("#ui-lang", "ar")
    page.wait_for_function("document.documentElement.dir === 'rtl'")
    page.reload()
    page.wait_for_selector(".card")
    assert page.input_value("#ui-lang") == "ar" and page.evaluate("document.documentElement.lang") == "ar"
    assert page.inner_text("button[type=submit]") == json.loads((CATALOGUES / "ar.json").read_text())["search"]
    assert english_left(page.evaluate(VISIBLE_TEXT), "ar") == []
