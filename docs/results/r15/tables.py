"""Issue 15 tables from the evaluation JSON (docs/results/r15/*.json, *.src.json):

    python docs/results/r15/tables.py base clc-a-parallel clc-c-parallel clc-a-gloss ...

t2i recalls per language, human-written and machine-translated caption sources apart (aggregated from
``--by-source``, weighted by queries), and on the task-1 (parallel) queries alone, where ``parallel`` applies.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
HUMAN = ["en", "de", "fr", "cs", "pt", "zh", "ar"]
MT = ["es", "zh", "ja", "ar", "uk"]
PARALLEL = {"multi30k-task1", "multi30k-ext-mt"}


def pooled(blocks: list[dict]) -> dict[str, float] | None:
    n = sum(b["queries"] for b in blocks)
    if not n:
        return None
    return {k: sum(b["t2i"][k] * b["queries"] for b in blocks) / n for k in ("r1", "r5", "r10")} | {"n": n}


def groups(name: str) -> dict[str, dict[tuple[str, str], dict[str, float] | None]]:
    src = json.loads((HERE / f"{name}.src.json").read_text())
    out: dict[str, dict[tuple[str, str], dict[str, float] | None]] = {"human": {}, "mt": {}, "task1": {}}
    for lang, sources in src.items():
        out["human"][(lang, "h")] = pooled([b for s, b in sources.items() if not s.endswith("-mt")])
        out["mt"][(lang, "m")] = pooled([b for s, b in sources.items() if s.endswith("-mt")])
        out["task1"][(lang, "p")] = pooled([b for s, b in sources.items() if s in PARALLEL])
    return out


def mean(cell: dict[str, float] | None) -> str:
    return "–" if cell is None else f"{(cell['r1'] + cell['r5'] + cell['r10']) / 3:.3f}"


def main(names: list[str]) -> None:
    data = {name: groups(name) for name in names}
    reports = {name: json.loads((HERE / f"{name}.json").read_text()) for name in names}
    for title, kind, langs in (
        ("human-written", "human", HUMAN),
        ("machine-translated", "mt", MT),
        ("task-1 (parallel) queries", "task1", ["en", "de", "fr", "cs", "es", "zh", "ar", "uk"]),
    ):
        tag = {"human": "h", "mt": "m", "task1": "p"}[kind]
        print(f"\nt2i mean recall (R@1+R@5+R@10)/3, {title}\n")
        print("| configuration | " + " | ".join(langs) + " |")
        print("| --- |" + " ---: |" * len(langs))
        for name in names:
            cells = [mean(data[name][kind].get((lang, tag))) for lang in langs]
            print(f"| {name} | " + " | ".join(cells) + " |")
    print("\nt2i R@1 / R@5 / R@10 and mR (t2i + i2t; i2t is not changed by CLC), all queries of a language\n")
    langs = ["en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk"]
    print("| configuration | " + " | ".join(langs) + " | A |")
    print("| --- |" + " ---: |" * (len(langs) + 1))
    for name in names:
        blocks = reports[name]["languages"]
        cells = []
        for lang in langs:
            t = blocks[lang]["t2i"]
            cells.append(f"{t['r1']:.3f} / {t['r5']:.3f} / {t['r10']:.3f} ({blocks[lang]['mR']:.3f})")
        print(f"| {name} | " + " | ".join(cells) + f" | {reports[name]['A']:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
