"""Render ``polyglot evaluate`` JSON outputs as markdown tables.

``python -m training.evaluation.report NAME=path.json ...`` prints one row per (run, language) with t2i/i2t R@1/5/10 and mR.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LANG_ORDER = ["en", "de", "fr", "cs", "pt"]


def rows(name: str, report: dict[str, Any]) -> list[str]:
    out = []
    langs = sorted(report["languages"], key=lambda lang: [*LANG_ORDER, lang].index(lang))
    for lang in langs:
        block = report["languages"][lang]
        t2i, i2t = block["t2i"], block["i2t"]
        cells = [t2i["r1"], t2i["r5"], t2i["r10"], i2t["r1"], i2t["r5"], i2t["r10"], block["mR"]]
        out.append(f"| {name} | {lang} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    out.append(f"| {name} | **A** | | | | | | | **{report['A']:.3f}** |")
    return out


def table(runs: list[tuple[str, dict[str, Any]]]) -> str:
    pools = sorted({report["pool_images"] for _, report in runs})
    header = [
        f"Pool: {', '.join(map(str, pools))} images.",
        "",
        "| run | lang | t2i R@1 | t2i R@5 | t2i R@10 | i2t R@1 | i2t R@5 | i2t R@10 | mR |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    return "\n".join(header + [row for name, report in runs for row in rows(name, report)])


def main(argv: list[str]) -> None:
    runs = []
    for argument in argv:
        name, _, path = argument.partition("=")
        runs.append((name, json.loads(Path(path or name).read_text(encoding="utf-8"))))
    print(table(runs))


if __name__ == "__main__":
    main(sys.argv[1:])
