"""The page's message catalogue (app/static/i18n/<lang>.json): every language has every English key with the same
{placeholders}, plural forms are Intl.PluralRules categories, and the page itself (index.html, app.js) holds no
user-visible English outside the catalogue."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest_plugins = ("api_fixtures",)

STATIC = Path(__file__).resolve().parents[2] / "app" / "static"
CATALOGUES = STATIC / "i18n"
REQUIRED = {"en", "ar", "hi", "ja", "zh", "ko", "ru", "tr", "es", "fr", "de", "pt", "id"}
PLURAL_FORMS = {"zero", "one", "two", "few", "many", "other"}
PLACEHOLDER = re.compile(r"\{(\w+)\}")
LETTER = re.compile(r"[^\W\d_]")  # a letter of any script
TEXT_ATTRIBUTES = {"placeholder", "title", "aria-label", "alt", "label"}


def _catalogue(code: str) -> dict[str, str | dict[str, str]]:
    data = json.loads((CATALOGUES / f"{code}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _forms(message: str | dict[str, str]) -> list[str]:
    return list(message.values()) if isinstance(message, dict) else [message]


def _placeholders(message: str | dict[str, str]) -> set[str]:
    return {name for form in _forms(message) for name in PLACEHOLDER.findall(form)}


LANGUAGES = sorted(path.stem for path in CATALOGUES.glob("*.json"))
ENGLISH = _catalogue("en")


def test_at_least_twenty_languages_with_the_most_used_ones() -> None:
    assert len(LANGUAGES) >= 21 and set(LANGUAGES) >= REQUIRED


@pytest.mark.parametrize("code", LANGUAGES)
def test_every_english_key_with_the_same_placeholders(code: str) -> None:
    messages = _catalogue(code)
    assert set(messages) == set(ENGLISH), (
        f"{code}: missing {set(ENGLISH) - set(messages)}, extra {set(messages) - set(ENGLISH)}"
    )
    for key, english in ENGLISH.items():
        message = messages[key]
        assert _placeholders(message) == _placeholders(english), f"{code} {key}: {message!r}"
        for form in _forms(message):
            assert form.strip(), f"{code} {key}: empty"
        if isinstance(message, dict):
            assert "other" in message and set(message) <= PLURAL_FORMS, f"{code} {key}: {sorted(message)}"


def test_translations_are_not_english_copies() -> None:
    """Labels a language would write differently: at most the brand and codes stay the same as in English."""
    for code in LANGUAGES:
        if code == "en":
            continue
        same = [key for key, value in _catalogue(code).items() if value == ENGLISH[key]]
        assert len(same) <= 8, f"{code} keeps English for {same}"


def test_the_page_offers_every_catalogue() -> None:
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    listed = re.search(r"const UI_LANGUAGES = \[([^\]]*)\]", script)
    assert listed is not None
    assert sorted(re.findall(r'"([a-z]{2,3})"', listed.group(1))) == LANGUAGES


class _PageText(HTMLParser):
    """Text nodes and text attributes of index.html that the catalogue does not fill."""

    VOID = frozenset({"meta", "link", "input", "img", "br", "hr", "source"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, bool]] = []  # (tag, filled by data-i18n)
        self.literals: list[str] = []
        self.keys: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        for name, value in named.items():
            if name.startswith("data-i18n") and value:
                self.keys.add(value)
            if name in TEXT_ATTRIBUTES and value and LETTER.search(value):
                self.literals.append(f"<{tag} {name}={value!r}>")
        if tag not in self.VOID:
            self.stack.append((tag, "data-i18n" in named))

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if not LETTER.search(data) or (self.stack and self.stack[-1][0] in {"script", "style"}):
            return
        if not (self.stack and self.stack[-1][1]):
            self.literals.append(data.strip())


def test_index_html_text_comes_from_the_catalogue() -> None:
    parser = _PageText()
    parser.feed((STATIC / "index.html").read_text(encoding="utf-8"))
    assert parser.literals == []
    assert parser.keys <= set(ENGLISH), parser.keys - set(ENGLISH)


# A user-visible string written into the page by app.js: text, attributes, options, the status line.
_SINKS = re.compile(
    r"""(?:\.(?:textContent|title|alt|placeholder|label)\s*=\s*|setStatus\(\s*|new\ Option\(\s*)
        (?P<literal>"[^"]*"|'[^']*'|`[^`]*`)""",
    re.VERBOSE,
)


def test_app_js_writes_user_text_only_through_t() -> None:
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    literals = []
    for match in _SINKS.finditer(script):
        literal = re.sub(r"\$\{[^}]*\}", "", match.group("literal"))  # a template's ${…} parts are code
        if LETTER.search(literal):
            literals.append(match.group(0))
    assert literals == []


def test_every_key_is_used_and_every_used_key_exists() -> None:
    script = (STATIC / "app.js").read_text(encoding="utf-8")
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    called = set(re.findall(r"""\bt\(\s*"([\w.]+)\"""", script))
    assert called <= set(ENGLISH), called - set(ENGLISH)
    unused = [key for key in ENGLISH if f'"{key}"' not in script and f'"{key}"' not in page]
    assert unused == []


def test_the_page_is_served_in_the_browsers_language(client) -> None:  # type: ignore[no-untyped-def]
    """<html lang dir> from Accept-Language (the best language with a catalogue, a region falling back to its
    language), before any script runs."""
    arabic = client.get("/", headers={"Accept-Language": "ar-EG, en;q=0.5"})
    assert arabic.status_code == 200 and '<html lang="ar" dir="rtl">' in arabic.text
    assert "accept-language" in arabic.headers["vary"].lower()
    assert '<html lang="ja" dir="ltr">' in client.get("/", headers={"Accept-Language": "xx, ja-JP;q=0.8"}).text
    assert '<html lang="en" dir="ltr">' in client.get("/", headers={"Accept-Language": "tlh"}).text
    assert '<html lang="en" dir="ltr">' in client.get("/").text
