"""The disjoint-collection tables from docs/results/disjoint/*.json, in the layout of Kádár et al.'s Tables 2–6: per
language I→T R@1, T→I R@1, Sum (of R@1/5/10 both ways, in %) and mR; Sum(Sum) over the table's languages.

usage: python benchmarks/disjoint_tables.py [docs/results/disjoint] > docs/results/disjoint/tables.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TABLES: list[tuple[str, list[str], list[tuple[str, str]]]] = [
    (
        "Table 2/4 — German ∕ Portuguese (real disjoint halves: task-2 German, Framed Multi30K Portuguese)",
        ["de", "pt"],
        [
            ("De half only", "A-de"),
            ("aligned De+Pt, all photos, no c2c", "A-aligned"),
            ("aligned De+Pt + c2c", "A-aligned-c2c"),
            ("**disjoint De ∕ Pt**", "A-disjoint"),
            ("… seed 1", "A-disjoint-s1"),
            ("+ pseudo (all), restart", "A-pseudo-all"),
            ("+ fine-tune", "A-pseudo-all-ft"),
            ("+ pseudo top 25 %, restart", "A-pseudo-top25"),
            ("+ fine-tune", "A-pseudo-top25-ft"),
            ("+ pseudo drop bottom 25 %, restart", "A-pseudo-drop-bottom25"),
            ("+ fine-tune", "A-pseudo-drop-bottom25-ft"),
            ("disjoint, InfoNCE τ 0.03 instead of the hinge", "E-disjoint-infonce"),
            ("+ its pseudo (all), fine-tune, InfoNCE", "F-pseudo-all-ft"),
            ("+ its pseudo drop bottom 25 %, fine-tune, InfoNCE", "F-pseudo-drop-bottom25-ft"),
            ("aligned De+Pt, the usual `polyglot train` recipe (InfoNCE + c2c 0.5)", "E-aligned-recipe"),
        ],
    ),
    (
        "Table 3/5 — aligned plus disjoint: De+Pt (c2c) on one half, Pt only on the other",
        ["de", "pt"],
        [
            ("**De+Pt+c2c ∕ Pt**", "B-base"),
            ("+ pseudo (all), restart", "B-pseudo-all"),
            ("+ fine-tune", "B-pseudo-all-ft"),
            ("+ pseudo top 25 %, restart", "B-pseudo-top25"),
            ("+ fine-tune", "B-pseudo-top25-ft"),
            ("+ pseudo drop bottom 25 %, restart", "B-pseudo-drop-bottom25"),
            ("+ fine-tune", "B-pseudo-drop-bottom25-ft"),
        ],
    ),
    (
        "Table 6 — Chinese (native Flickr8k-CN) ∕ English (Flickr8k), + machine-translated Chinese",
        ["zh", "en"],
        [
            ("aligned Zh+En + c2c, all photos", "C-aligned-c2c"),
            ("**disjoint Zh ∕ En**", "C-disjoint"),
            ("+ Translation (MT zh of the En half, own collection)", "C-translation"),
            ("+ c2c on the synthetic pairs (En + MT zh, one collection)", "C-translation-c2c"),
            ("+ pseudo (all), fine-tune", "C-pseudo-all-ft"),
        ],
    ),
    (
        "Kádár et al. 2018's artificial 50/50 split — English ∕ German task-2 halves",
        ["en", "de"],
        [("aligned En+De + c2c, all photos", "D-aligned-c2c"), ("disjoint En ∕ De (50/50)", "D-disjoint")],
    ),
]


def cells(block: dict) -> tuple[float, float, float, float]:
    t2i, i2t = block["t2i"], block["i2t"]
    total = 100 * sum(t2i[k] + i2t[k] for k in ("r1", "r5", "r10"))
    return 100 * i2t["r1"], 100 * t2i["r1"], total, block["mR"]


def table(title: str, langs: list[str], rows: list[tuple[str, str]], folder: Path) -> str:
    head = "| run | " + " | ".join(f"{lg} I→T | {lg} T→I | {lg} Sum | {lg} mR" for lg in langs) + " | Sum(Sum) |"
    lines = [f"#### {title}", "", head, "|" + " --- |" + " ---: |" * (4 * len(langs) + 1)]
    for label, name in rows:
        path = folder / f"{name}.json"
        if not path.exists():
            lines.append(f"| {label} (`{name}`) | " + "not run | " * (4 * len(langs) + 1))
            continue
        report = json.loads(path.read_text())["languages"]
        values, total = [], 0.0
        for lang in langs:
            i2t, t2i, rsum, mr = cells(report[lang])
            values += [f"{i2t:.1f}", f"{t2i:.1f}", f"{rsum:.1f}", f"{mr:.3f}"]
            total += rsum
        lines.append(f"| {label} (`{name}`) | " + " | ".join(values) + f" | {total:.1f} |")
    return "\n".join(lines) + "\n"


def hubness(folder: Path) -> str:
    lines = [
        "#### Pseudo-pairs: filters and hubness",
        "",
        "| pseudo-pair set | pairs kept | rows written | photos | source captions used (all pairs) | top 150 cover "
        "(all pairs) | cosine q25 / q50 / q75 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for path in sorted(folder.glob("pseudo-*.json")):
        r = json.loads(path.read_text())
        hub, q = r["hubness_all"], r["score_quantiles"]
        lines.append(
            f"| `{path.stem}` | {r['kept_pairs']} of {r['target_captions']} | {r['rows_written']} | {r['photos']} | "
            f"{hub['distinct_used']} of {hub['source_captions']} ({hub['share_used']:.1%}) | "
            f"{hub['top150_share_of_pairs']:.1%} | {q['25']:.3f} / {q['50']:.3f} / {q['75']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results/disjoint")
    print("\n".join(table(title, langs, rows, folder) for title, langs, rows in TABLES))
    print(hubness(folder))


if __name__ == "__main__":
    main()
