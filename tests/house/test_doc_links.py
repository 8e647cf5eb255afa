"""Every relative link of the user's guide (README.md, CONTRIBUTING.md, CHANGELOG.md, docs/) names a file that
exists, and a ``#fragment`` names a heading of that page (GitHub's anchors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(
    [ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md") if (ROOT / name).exists()]
    + list((ROOT / "docs").rglob("*.md"))
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)|<img[^>]*\bsrc=\"([^\"]+)\"")
FENCE = re.compile(r"^(```|~~~)")


def prose(page: Path) -> str:
    """The page without its code blocks (a link written inside one is an example, not a link)."""
    lines, inside = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line.lstrip()):
            inside = not inside
        elif not inside:
            lines.append(line)
    return "\n".join(lines)


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for line in prose(page).splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def links(page: Path) -> list[str]:
    return [a or b for a, b in LINK.findall(prose(page))]


def test_the_guide_has_its_pages() -> None:
    names = {page.relative_to(ROOT).as_posix() for page in PAGES}
    for page in ("usage", "api", "configuration", "deployment", "photo-library", "tagging", "design", "model-card"):
        assert f"docs/{page}.md" in names


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or (fragment and file.suffix == ".md" and fragment not in anchors(file)):
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)}: {broken}"
