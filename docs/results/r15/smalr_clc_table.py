"""The SMALR + CLC rows of docs/results.md "Issue 15" (t2i mean recall per language, from this folder's JSON):

    python docs/results/r15/smalr_clc_table.py la-long [smalr-long ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
LANGS = ("en", "de", "fr", "cs")
VARIANTS = ("", "-clc-a-parallel", "-clc-c-parallel", "-clc-a-gloss", "-clc-c-gloss")


def main(towers: list[str]) -> None:
    print("| tower + CLC | " + " | ".join(LANGS) + " | mean |")
    print("| --- |" + " ---: |" * (len(LANGS) + 1))
    for tower in towers:
        for variant in VARIANTS:
            path = HERE / f"{tower}{variant}.json"
            if not path.exists():
                continue
            blocks = json.loads(path.read_text())["languages"]
            cells = [sum(blocks[lang]["t2i"][k] for k in ("r1", "r5", "r10")) / 3 for lang in LANGS]
            name = f"{tower} + {variant[1:]}" if variant else tower
            print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {sum(cells) / len(cells):.3f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
