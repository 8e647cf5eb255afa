"""Markdown rows of docs/results.md "Issue 15: SMALR" from the JSON in this folder.

python docs/results/r15/smalr_tables.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
LANGS = ("en", "de", "fr", "cs")
NAMES = {"la": "LA (latent vocabulary only)", "hem": "HEM", "smalr": "SMALR (HEM + MCLM + L_nc + L_adv)"}
NAMES.update({f"{name}-long": f"{title}, 40-epoch budget" for name, title in list(NAMES.items())})
# the towers they are compared with, from earlier rounds (same dev pool and languages)
BASELINES = {
    "../served-main.json": "shipped main tower, served alone (muse+e5-small, InfoNCE; POLYGLOT_FAST_TOWER=off)",
    "../muse-m3l-multi-80.json": "M3L tower over mUSE (`muse-m3l-multi-80`, round 1)",
}


def main() -> None:
    print("| model | " + " | ".join(f"{lang} R@1 / R@5 / R@10 / mR" for lang in LANGS) + " | A (en, de, fr, cs) |")
    print("| --- |" + " ---: |" * (len(LANGS) + 1))
    rows = [(HERE / f"{name}.json", title) for name, title in NAMES.items()]
    rows += [(HERE / name, title) for name, title in BASELINES.items()]
    for path, title in rows:
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        cells = []
        for lang in LANGS:
            block = report["languages"][lang]
            t2i = block["t2i"]
            cells.append(f"{t2i['r1']:.3f} / {t2i['r5']:.3f} / {t2i['r10']:.3f} / {block['mR']:.3f}")
        mean = sum(report["languages"][lang]["mR"] for lang in LANGS) / len(LANGS)  # pt was not trained on
        print(f"| {title} | " + " | ".join(cells) + f" | {mean:.3f} |")
    print()
    print("| model | trained parameters | parameters at query time | best epoch | held-out rsum | seconds |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, title in NAMES.items():
        path = HERE / f"{name}.config.json"
        if not path.exists():
            continue
        training = json.loads(path.read_text())["training"]
        counts = training["parameters"]
        best = max(training["history"], key=lambda h: h["heldout_rsum"])
        print(
            f"| {title} | {counts['training']:,} | {counts['query_time']:,} | {training['best_epoch']} "
            f"| {best['heldout_rsum']:.3f} | {training['seconds']:.0f} |"
        )


if __name__ == "__main__":
    main()
