"""The student's depth × precision table: served quality (from ``polyglot evaluate`` JSON files) and text-encoding
latency (measured here), one row per student folder and precision.

Latency is the query side alone, as the service runs it: the student's
:class:`~indexer.student.encoder.StudentEmbedder` (built by the encoder factory) with one ONNX Runtime thread (the service's ``POLYGLOT_INFERENCE_THREADS`` default), on real dev captions of each
language, one query per call (p50 over the calls) and batches of 8 (what the micro-batcher forms at 8
clients; ms per batch)::

    .venv/bin/python benchmarks/student_depth.py --student d2=var/students/d2 --student d4=indexer/assets/student \\
        --quality d4:fp32=docs/results/student/flickr-d4-fp32.json,docs/results/student/wide-d4-fp32.json ... \\
        --out docs/results/student/depth.json --md docs/results/student/depth.md
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from load_search import queries  # noqa: E402

from indexer.encoders import build_text_side  # noqa: E402
from indexer.settings import Settings  # noqa: E402

LANGS = ("en", "de", "cs", "zh", "ru")


def latency(folder: Path, precision: str, texts: list[tuple[str, str]], repeat: int = 3) -> dict[str, float]:
    settings = Settings()
    embedder = build_text_side(settings.model_copy(update={"e5_precision": precision}), folder, threads=1)
    embedder.load()
    embedder.embed(["warm up"], "en")
    singles = []
    for _ in range(repeat):
        for text, lang in texts:
            start = time.perf_counter()
            embedder.embed([text], lang)
            singles.append((time.perf_counter() - start) * 1000)
    batches = []
    for _ in range(repeat):
        for start_row in range(0, len(texts) - 7, 8):
            chunk = texts[start_row : start_row + 8]
            start = time.perf_counter()
            embedder.embed([t for t, _ in chunk], [lang for _, lang in chunk])
            batches.append((time.perf_counter() - start) * 1000)
    return {
        "single_p50_ms": round(statistics.median(singles), 2),
        "single_p99_ms": round(sorted(singles)[int(0.99 * (len(singles) - 1))], 2),
        "batch8_p50_ms": round(statistics.median(batches), 2),
    }


def quality(files: list[Path]) -> dict[str, dict[str, float]]:
    """t2i R@10 per language (and English R@1) from ``polyglot evaluate --json`` outputs, keyed by file stem."""
    out: dict[str, dict[str, float]] = {}
    for path in files:
        report = json.loads(path.read_text(encoding="utf-8"))
        block = {lang: round(v["t2i"]["r10"], 3) for lang, v in sorted(report["languages"].items())}
        block["en_r1"] = round(report["languages"]["en"]["t2i"]["r1"], 3)
        out[path.stem] = block
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student", action="append", default=[], help="NAME=FOLDER (repeatable).")
    parser.add_argument("--precisions", default="fp32,int8")
    parser.add_argument("--quality", action="append", default=[], help="NAME:PRECISION=file.json[,file.json].")
    parser.add_argument("--queries", type=int, default=200, help="Dev captions per run (balanced over languages).")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--md", type=Path, required=True)
    args = parser.parse_args()
    texts = queries(args.queries, langs=LANGS)
    given = {}
    for item in args.quality:
        key, files = item.split("=", 1)
        given[key] = quality([Path(f) for f in files.split(",")])
    rows = []
    for item in args.student:
        name, folder = item.split("=", 1)
        for precision in args.precisions.split(","):
            key = f"{name}:{precision}"
            row = {"student": name, "folder": folder, "precision": precision, **latency(Path(folder), precision, texts)}
            row["quality"] = given.get(key, {})
            rows.append(row)
            print(json.dumps(row), flush=True)
    args.out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=2) + "\n", encoding="utf-8")
    lines = [
        "| student | precision | 1 query p50 (ms) | 8 queries p50 (ms) | quality (t2i R@10 per language; en R@1) |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for row in rows:
        cells = "; ".join(
            f"{stem}: " + ", ".join(f"{k} {v:.3f}" for k, v in block.items()) for stem, block in row["quality"].items()
        )
        lines.append(
            f"| {row['student']} | {row['precision']} | {row['single_p50_ms']} | {row['batch8_p50_ms']} | {cells or '—'} |"
        )
    args.md.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
