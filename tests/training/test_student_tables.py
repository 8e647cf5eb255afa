"""``benchmarks/student_tables.py --ratios``: each language's R@10 over its own row's English, on hand-made files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def evaluation(r10: dict[str, float]) -> dict[str, object]:
    return {"languages": {lang: {"t2i": {"r1": 0.0, "r10": value}} for lang, value in r10.items()}}


def test_ratios_are_to_each_runs_own_english_and_count_whole_languages(tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(evaluation({"en": 0.8, "de": 0.72, "zh": 0.4})), encoding="utf-8")
    second.write_text(json.dumps(evaluation({"en": 0.5, "de": 0.45})), encoding="utf-8")
    # --by-source reads NAME.src.json beside each file: language → caption source → recalls.
    first.with_suffix(".src.json").write_text(
        json.dumps({"zh": {"native": {"t2i": {"r10": 0.2}}, "mt": {"t2i": {"r10": 0.72}}}}), encoding="utf-8"
    )
    second.with_suffix(".src.json").write_text(json.dumps({}), encoding="utf-8")
    script = ROOT / "benchmarks" / "student_tables.py"
    rows_given = ["--flickr", f"one={first}", "--flickr", f"two={second}"]
    command = [sys.executable, str(script), "--ratios", "--by-source", *rows_given, "--md", str(tmp_path / "t.md")]
    table = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    assert table == (tmp_path / "t.md").read_text(encoding="utf-8") + "\n"
    rows = {line[2:5]: line for line in table.splitlines() if line.startswith(("| one", "| two"))}
    # de 0.72 / 0.8 = 0.90 reaches the Flickr target, zh 0.4 / 0.8 = 0.50 does not; the zh sources are not counted again.
    assert "0.720 (0.90)" in rows["one"] and "0.400 (0.50)" in rows["one"]
    assert "0.200 (0.25)" in rows["one"] and "0.720 (0.90)" in rows["one"].split("0.400 (0.50)")[1]
    assert rows["one"].endswith("| 1 of 2 |")
    # The second run has its own English (0.45 / 0.5 = 0.90) and no Chinese: a dash, and one language counted.
    assert "0.450 (0.90)" in rows["two"] and "| — |" in rows["two"]
    assert rows["two"].endswith("| 1 of 1 |")
