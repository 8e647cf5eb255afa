"""Print the ablation tables (docs/results/student/ablation.md) from the runs' evaluation JSONs and training logs.

Run from the repository root after the four runs and their evaluations (``polyglot train student`` with one term left out each); reads docs/results/student/{wide,flickr}-abl-*.json, the case-form files
wide-abl-*-fp32-{upper,capitalised}.json and var/students/abl-*/train-log.jsonl (the held-out checks).
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
RUNS = [
    ("all five terms (control)", "abl-all"),
    ("without `words`", "abl-nowords"),
    ("without translated names (`--pseudo-concept-share 0`)", "abl-nonames"),
    ("without case forms (`--no-case-forms`)", "abl-nocase"),
]
CHECKS = ["en", "de", "zh", "ar", "words-de", "words-zh", "words-ru", "words-tr", "names-de", "names-zh", "names-tr"]


def recalls(path: Path) -> dict[str, float]:
    languages = json.loads(path.read_text())["languages"]
    return {lang: block["t2i"]["r10"] for lang, block in languages.items()}


def table(kind: str, suffix: str = "") -> None:
    rows = [(name, HERE / f"{kind}-{run}-fp32{suffix}.json") for name, run in RUNS]
    rows = [(name, path) for name, path in rows if path.is_file()]
    if not rows:
        return
    langs = sorted(recalls(rows[0][1]), key=lambda lang: (lang != "en", lang))
    print(f"{kind}{suffix or ''} (t2i R@10)\n")
    print("| run | " + " | ".join(langs) + " | mean without en | lowest ÷ en |")
    print("| --- | " + " | ".join("---:" for _ in langs) + " | ---: | ---: |")
    control = None
    for name, path in rows:
        r = recalls(path)
        others = [r[lang] for lang in langs if lang != "en"]
        mean = sum(others) / len(others)
        control = mean if control is None else control
        delta = "" if mean == control else f" ({mean - control:+.3f})"
        cells = " | ".join(f"{r[lang]:.3f}" for lang in langs)
        print(f"| {name} | {cells} | {mean:.3f}{delta} | {min(others) / r['en']:.2f}× |")
    print()


def checks() -> None:
    print("held-out checks at the last step (train-log.jsonl)\n")
    print("| run | " + " | ".join(CHECKS) + " |")
    print("| --- | " + " | ".join("---:" for _ in CHECKS) + " |")
    for name, run in RUNS:
        log = Path("var/students") / run / "train-log.jsonl"
        if not log.is_file():
            continue
        last = [json.loads(line) for line in log.read_text().splitlines() if "holdout" in line][-1]
        cells = " | ".join(f"{last['holdout'][key]:.3f}" if key in last["holdout"] else "—" for key in CHECKS)
        print(f"| {name} (step {last['step']}) | {cells} |")
    print()


if __name__ == "__main__":
    for kind in sys.argv[1:] or ["wide", "flickr"]:
        table(kind)
    table("wide", "-capitalised")
    table("wide", "-upper")
    checks()
