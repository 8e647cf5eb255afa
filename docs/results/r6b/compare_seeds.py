"""Served dev t2i R@10 per language, human-written and machine-translated captions apart (queries weighted over
sources, as the round-6 tables), for several `polyglot evaluate --by-source` files; plus A from the --json files.

    python docs/results/r6b/compare_seeds.py NAME=docs/results/…/served-X …   (path without .by-source.json)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HUMAN = ["en", "de", "fr", "cs", "pt", "zh", "ar"]
MT = ["es", "zh", "ja", "ar", "uk"]


def split(by_source: dict, lang: str, machine: bool) -> float | None:
    rows = [r for src, r in by_source.get(lang, {}).items() if src.endswith("-mt") == machine]
    queries = sum(r["queries"] for r in rows)
    return sum(r["t2i"]["r10"] * r["queries"] for r in rows) / queries if queries else None


def main() -> None:
    print("| configuration | " + " | ".join(HUMAN) + " | " + " | ".join(f"{c} (MT)" for c in MT) + " | A |")
    print("| --- |" + " ---: |" * (len(HUMAN) + len(MT) + 1))
    for arg in sys.argv[1:]:
        name, path = arg.split("=", 1)
        by_source = json.loads(Path(f"{path}.by-source.json").read_text(encoding="utf-8"))
        overall = json.loads(Path(f"{path}.json").read_text(encoding="utf-8"))
        cells = [split(by_source, lang, False) for lang in HUMAN] + [split(by_source, lang, True) for lang in MT]
        text = " | ".join("" if c is None else f"{c:.3f}" for c in cells)
        print(f"| {name} | {text} | {overall['A']:.3f} |")


if __name__ == "__main__":
    main()
