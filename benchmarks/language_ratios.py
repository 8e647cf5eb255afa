"""Each language's text→image R@10 as a share of the same run's English: issue 33's per-language targets.

Reads ``polyglot evaluate --json`` files (and, for a ``--by-source`` file, one row per caption source) and prints a
Markdown table: a row per file, a column per language, each cell ``R@10 (ratio to that file's English)``, with the
languages at or above ``--target`` counted at the end. It shows whether any model the project can run reaches the
target, not only the student::

    .venv/bin/python benchmarks/language_ratios.py --target 0.75 \\
        "label bridge=docs/results/student/wide-label-bridge-s18.json" \\
        "EmbeddingGemma=docs/results/embeddinggemma/wide-gemma.json" \\
        "student=docs/results/student/wide-w12a15f-int8-s19.json"
    .venv/bin/python benchmarks/language_ratios.py --target 0.90 --by-source \\
        "student=docs/results/student/flickr-w12a15f-int8-s19.json"
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def t2i_r10(languages: dict[str, Any]) -> dict[str, float]:
    """Language → text→image R@10 of one evaluation file's ``languages`` table."""
    return {lang: float(row["t2i"]["r10"]) for lang, row in languages.items() if isinstance(row, dict) and "t2i" in row}


def source_r10(path: Path) -> dict[str, float]:
    """``lang:source`` → R@10 of the ``--by-source`` file written beside ``path`` (``NAME.src.json``)."""
    table = json.loads(path.with_suffix(".src.json").read_text(encoding="utf-8"))
    return {
        f"{lang}:{source}": float(row["t2i"]["r10"])
        for lang, sources in table.items()
        for source, row in sources.items()
    }


def ratio_row(label: str, recalls: dict[str, float], columns: list[str], target: float) -> str:
    english = recalls["en"]
    cells = [f"{recalls[c]:.3f} ({recalls[c] / english:.2f})" if c in recalls else "—" for c in columns]
    # Source columns ("zh:flickr8k-cn") split a language already counted; only whole languages count.
    languages = [c for c in columns if ":" not in c and c in recalls]
    # A tolerance, so that a ratio printed as the target (0.6 / 0.8 is 0.7499… in floats) counts as reaching it.
    reached = sum(recalls[lang] / english >= target - 1e-9 for lang in languages)
    return f"| {label} | {english:.3f} | " + " | ".join(cells) + f" | {reached} of {len(languages)} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="LABEL=FILE: a polyglot evaluate --json file and its row label")
    parser.add_argument("--target", type=float, default=0.75, help="share of English each language must reach")
    parser.add_argument("--by-source", action="store_true", help="also a column per caption source (NAME.src.json)")
    args = parser.parse_args()
    rows: list[tuple[str, dict[str, float]]] = []
    for run in args.runs:
        label, _, file = run.partition("=")
        path = Path(file)
        recalls = t2i_r10(json.loads(path.read_text(encoding="utf-8"))["languages"])
        if args.by_source:
            recalls.update(source_r10(path))
        rows.append((label, recalls))
    languages = sorted({lang for _, recalls in rows for lang in recalls if lang != "en" and ":" not in lang})
    sources = sorted({key for _, recalls in rows for key in recalls if ":" in key})
    columns = languages + sources
    print(f"Text→image R@10 (ratio to the same run's English); target: each language ≥ {args.target:.2f}× English.")
    print()
    print("| run | en | " + " | ".join(columns) + f" | languages ≥ {args.target:.2f}× |")
    print("| --- | ---: | " + " | ".join("---:" for _ in columns) + " | ---: |")
    for label, recalls in rows:
        print(ratio_row(label, recalls, columns, args.target))


if __name__ == "__main__":
    main()
