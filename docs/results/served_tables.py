"""Markdown tables of served dev evaluations (``polyglot evaluate --json X.json --by-source X.src.json``).

    .venv/bin/python docs/results/served_tables.py NAME=docs/results/served-route [NAME=...]

Human-written captions and machine-translated ones are reported apart (``source`` of each caption row), as the
data READMEs ask: a model that scores well on machine-translated queries has not shown it serves people.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

MACHINE_TRANSLATED = {"multi30k-ext-mt", "flickr8k-ja-mt"}
HUMAN = ["en", "de", "fr", "cs", "pt", "zh", "ar"]
MT = ["es", "zh", "ja", "ar", "uk"]


def t2i_r10(by_source: dict, lang: str, machine: bool) -> tuple[float, int] | None:
    """Query-weighted t2i R@10 of a language over its human-written (or machine-translated) sources."""
    blocks = [b for s, b in by_source.get(lang, {}).items() if (s in MACHINE_TRANSLATED) == machine]
    queries = sum(b["queries"] for b in blocks)
    if not queries:
        return None
    return sum(b["t2i"]["r10"] * b["queries"] for b in blocks) / queries, queries


def main(specs: list[str]) -> None:
    runs = []
    for spec in specs:
        name, _, stem = spec.rpartition("=")
        report = json.loads(Path(f"{stem}.json").read_text())
        runs.append((name, report, json.loads(Path(f"{stem}.src.json").read_text())))
    for machine, langs in ((False, HUMAN), (True, MT)):
        kind = "machine-translated" if machine else "human-written"
        print(f"\nDev text→image R@10, {kind} captions (pool {runs[0][1]['pool_images']:,} photos):\n")
        print("| configuration | " + " | ".join(langs) + " |")
        print("| --- |" + " ---: |" * len(langs))
        for name, report, by_source in runs:
            cells = []
            for lang in langs:
                found = t2i_r10(by_source, lang, machine)
                route = report["languages"].get(lang, {}).get("route", "").split(":")[0]
                cells.append("—" if found is None else f"{found[0]:.3f} ({route})")
            print(f"| {name} | " + " | ".join(cells) + " |")
        counts = [t2i_r10(runs[0][2], lang, machine) for lang in langs]
        print("| queries | " + " | ".join("—" if c is None else f"{c[1]:,}" for c in counts) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
