"""Served dev t2i R@10 per language from the e5 precision evaluation JSONs (docs/results/e5-precision/*.json).

    .venv/bin/python docs/results/e5-precision/compare.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
LANGS = ["en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk"]


def main() -> None:
    runs = {path.stem: json.loads(path.read_text()) for path in sorted(HERE.glob("*.json"))}
    print("| run (dev t2i R@10) | " + " | ".join(LANGS) + " |")
    print("| --- | " + " | ".join("---:" for _ in LANGS) + " |")
    for name, run in runs.items():
        cells = []
        for lang in LANGS:
            row = run["languages"].get(lang)
            cells.append(f"{row['t2i']['r10']:.3f} ({row['route'].split(':')[0]})" if row else "")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
