"""Per-language dev tables from ``polyglot evaluate --json`` files: t2i R@10 (and R@1) per language, one row per file,
with each language's ratio to English (the issue's "≥ 0.75× English" / "≥ 0.90× English" targets)::

    .venv/bin/python benchmarks/student_tables.py --wide "label-bridge=docs/results/student/wide-label-bridge.json" \\
        --wide "student=docs/results/student/wide-w12f10-fp32.json" \\
        --flickr "student=docs/results/student/flickr-w12f10-fp32.json" --md docs/results/student/round-tables.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

WIDE = ("en", "de", "fr", "cs", "es", "pt", "zh", "ja", "it", "ko", "pl", "ru", "tr")
FLICKR = ("en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk")


def recalls(path: Path) -> dict[str, dict[str, float]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return {lang: values["t2i"] for lang, values in data["languages"].items()}


def table(title: str, rows: list[tuple[str, Path]], langs: tuple[str, ...], with_r1: bool) -> list[str]:
    lines = [f"**{title}** (t2i R@10{' / R@1' if with_r1 else ''}; last column: the weakest language ÷ English R@10)", ""]
    lines.append("| text side | " + " | ".join(langs) + " | min ÷ en |")
    lines.append("| --- | " + " | ".join("---:" for _ in langs) + " | ---: |")
    for name, path in rows:
        scores = recalls(path)
        cells = []
        for lang in langs:
            if lang not in scores:
                cells.append("—")
                continue
            r10 = scores[lang]["r10"]
            cells.append(f"{r10:.3f}/{scores[lang]['r1']:.3f}" if with_r1 else f"{r10:.3f}")
        others = [scores[lang]["r10"] for lang in langs if lang in scores and lang != "en"]
        ratio = min(others) / scores["en"]["r10"] if others and "en" in scores else float("nan")
        lines.append(f"| {name} (`{path.name}`) | " + " | ".join(cells) + f" | {ratio:.2f} |")
    return [*lines, ""]


def parse(items: list[str]) -> list[tuple[str, Path]]:
    return [(item.split("=", 1)[0], Path(item.split("=", 1)[1])) for item in items]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wide", action="append", default=[], help="NAME=evaluate.json (imagenet-samples).")
    parser.add_argument("--flickr", action="append", default=[], help="NAME=evaluate.json (m30k-f8k dev).")
    parser.add_argument("--md", type=Path, required=True)
    args = parser.parse_args()
    lines: list[str] = []
    if args.wide:
        lines += table("Wide dev, 700 ImageNet photos, the class name as the query", parse(args.wide), WIDE, True)
    if args.flickr:
        lines += table("Flickr dev, 1,000 photos, every caption a query", parse(args.flickr), FLICKR, False)
    args.md.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
