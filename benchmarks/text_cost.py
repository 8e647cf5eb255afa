"""CPU cost of the text side alone (encoder + head), one thread: what one query and a batch of 8 cost.

On a shared machine wall time follows the neighbours; the CPU time of the process does not (much), so this
reports both, per query, as medians over the runs. The text side is the configured one (the student unless
POLYGLOT_TOWER_PATH / POLYGLOT_TEXT_ENCODER say otherwise), built by the service's own loader::

    .venv/bin/python benchmarks/text_cost.py --queries 40 --out benchmarks/text_cost-student.json
    POLYGLOT_TEXT_ENCODER=embeddinggemma .venv/bin/python benchmarks/text_cost.py --queries 40 \\
        --out benchmarks/text_cost-embeddinggemma.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from load_search import queries  # noqa: E402  (benchmarks are scripts, not a package)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=40, help="Distinct dev captions (en, de, fr, cs in turn).")
    parser.add_argument("--langs", default="en,de,fr,cs")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    from indexer.query.models import load_models
    from indexer.settings import Settings

    settings = Settings()
    began = time.perf_counter()
    models = load_models(settings, alignments=False, clc=False, threads=args.threads)
    load_s = time.perf_counter() - began
    pool = queries(args.queries + 8, langs=tuple(args.langs.split(",")))
    texts, langs = [t for t, _ in pool], [lang for _, lang in pool]
    models.text.embed(texts[:8], langs[:8])  # warm-up (first call allocates)
    texts, langs = texts[8:], langs[8:]

    def measure(batch: int) -> dict[str, float]:
        wall, cpu = [], []
        for start in range(0, len(texts) - batch + 1, batch):
            w0, c0 = time.perf_counter(), time.process_time()
            models.text.embed(texts[start : start + batch], langs[start : start + batch])
            wall.append((time.perf_counter() - w0) * 1000 / batch)
            cpu.append((time.process_time() - c0) * 1000 / batch)
        return {
            "calls": len(wall),
            "wall_ms_per_query_p50": round(statistics.median(wall), 2),
            "cpu_ms_per_query_p50": round(statistics.median(cpu), 2),
        }

    load_start = os.getloadavg()[0]
    report = {
        "command": " ".join(
            [*(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("POLYGLOT_")), "python", *sys.argv]
        ),
        "text_side": models.label,
        "threads": args.threads,
        "load_seconds": round(load_s, 1),
        "one_at_a_time": measure(1),
        "batches_of_8": measure(8),
        "load_avg_1m": {"start": round(load_start, 2), "end": round(os.getloadavg()[0], 2)},
        "cpus": os.cpu_count(),
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
