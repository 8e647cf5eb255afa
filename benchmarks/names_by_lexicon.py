"""Tables of wide-dev R@10 by name part (in the concept lexicon or not), per language, from ``polyglot evaluate
--imagenet-labels ... --name-lexicon --json`` reports: one column pair per run (the served route, with and without
concept fusion, the label-bridge baseline), and the ratio to English of each part.

    PYTHONPATH=. .venv/bin/python benchmarks/names_by_lexicon.py --run "served=a.json" --run "label bridge=b.json" \\
        --out docs/results/search-names-by-lexicon --command "the commands that made a.json and b.json"
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

PARTS = ("in_lexicon", "not_in_lexicon")


def tables(runs: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], str]:
    merged: dict[str, Any] = {"runs": {}}
    first = next(iter(runs.values()))["name_lexicon"]
    merged["lexicon_digest"] = first["lexicon_digest"]
    langs = list(first["languages"])
    for label, report in runs.items():
        merged["runs"][label] = {
            "served": report.get("served"),
            "languages": report["name_lexicon"]["languages"],
            "all": {lang: report["languages"][lang]["t2i"]["r10"] for lang in langs},
        }
    header = "| lang | names in / not in lexicon |"
    rule = "| --- | ---: |"
    for label in runs:
        header += f" {label}: all | in lexicon | not in |"
        rule += " ---: | ---: | ---: |"
    lines = [header, rule]
    for lang in langs:
        block = first["languages"][lang]
        row = f"| {lang} | {block['in_lexicon']['queries']} / {block['not_in_lexicon']['queries']} |"
        for label in runs:
            run = merged["runs"][label]
            cells = [f"{run['all'][lang]:.3f}"]
            for part in PARTS:
                value = run["languages"][lang][part]["r10"]
                english = run["languages"]["en"][part]["r10"] if part == "in_lexicon" else run["all"]["en"]
                cells.append("—" if value is None else f"{value:.3f} ({value / english:.2f}×)")
            row += " " + " | ".join(cells) + " |"
        lines.append(row)
    return merged, "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="append", required=True, help="LABEL=report.json (repeatable)")
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.json and OUT.md")
    parser.add_argument("--command", default="", help="the commands that produced the reports (stated in the .md)")
    parser.add_argument("--notes", type=Path, default=None, help="markdown placed under the table")
    args = parser.parse_args()
    runs = {}
    for given in args.run:
        label, _, path = given.rpartition("=")
        runs[label] = json.loads(Path(path).read_text(encoding="utf-8"))
    merged, table = tables(runs)
    merged["command"] = args.command
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(merged, ensure_ascii=False, indent=1) + "\n", "utf-8")
    notes = args.notes.read_text(encoding="utf-8") if args.notes else ""
    body = (
        "# Wide dev search by name: names in the concept lexicon and names not in it\n\n"
        "Text→image R@10 on the wide dev set (700 imagenet-samples photos, one per class; each class name per "
        "language is a query with one right photo). A name is *in lexicon* when it is, case and spacing aside, a "
        "name of its photo's own concept in that language in the shipped concept lexicon "
        f"(`indexer/assets/concepts`, digest `{merged['lexicon_digest']}`). In brackets: the ratio to English "
        "(in lexicon: to English names in the lexicon; not in: to all English names, as English has almost none "
        "outside it).\n\n" + table + "\n" + notes + f"\nCommands:\n\n```\n{args.command}\n```\n"
    )
    args.out.with_suffix(".md").write_text(body, encoding="utf-8")


if __name__ == "__main__":
    main()
