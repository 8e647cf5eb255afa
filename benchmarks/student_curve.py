"""A student run's training curve as a table: each logged term's mean and the held-out checks, per step.

Reads the run's ``train-log.jsonl`` (``polyglot train student`` writes a line every ``checkpoint_every`` steps and the
held-out checks every ``eval_every``)::

    .venv/bin/python benchmarks/student_curve.py var/students/w12f10/train-log.jsonl \\
        --md docs/results/student/curve.md --json docs/results/student/curve.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TERMS = ("photo", "distill", "concept", "words", "keep")


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def markdown(entries: list[dict[str, Any]], source: str) -> str:
    checks = sorted(
        {key for entry in entries for key in entry.get("holdout", {})}, key=lambda k: (k.startswith("words"), k)
    )
    terms = [term for term in TERMS if any(term in entry for entry in entries)]
    header = ["step", "steps/s", *terms, *checks]
    lines = [
        f"Training curve of `{source}`: each term's mean over the steps since the previous row; held-out checks "
        "(train photos held out: t2i R@10 per language; `words-XX`: held-out dictionary words, R@1 of the English word "
        "among the held-out ones; `names-XX`, where logged: translated names held out in that language, R@1 of their "
        "class among the 1,000) at every evaluation.",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---:" for _ in header) + " |",
    ]
    for entry in entries:
        if "holdout" not in entry:
            continue
        row = [str(entry["step"]), f"{entry.get('steps_per_s', float('nan')):.3f}"]
        row += [f"{entry[term]:.3f}" if term in entry else "" for term in terms]
        row += [f"{entry['holdout'][key]:.3f}" if key in entry["holdout"] else "" for key in checks]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--md", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    entries = read_log(args.log)
    args.md.write_text(markdown(entries, str(args.log)), encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    print(args.md.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
