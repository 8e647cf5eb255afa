"""How far the int8 image CNN's vectors are from fp32's, and a features cache that mixes the two.

Reads the two features caches that ``polyglot evaluate`` filled (``POLYGLOT_IMAGE_PRECISION=fp32`` and ``int8``
over the same photos: ``efficientnet-lite2.sqlite`` and ``efficientnet-lite2-int8.sqlite``) and writes:

* the cosine between each photo's fp32 and int8 features, raw and in the served image space (the shipped
  student's), next to the cosine of each photo with its nearest other photo (what near-duplicate detection and
  ranking must keep apart);
* with ``--mixed-cache``, a copy of the cache folder where every second photo's fp32 features are replaced by its
  int8 ones: an index where half the photos were indexed before the switch to int8 and half after. Evaluating with
  ``POLYGLOT_CACHE_DIR=<it> POLYGLOT_IMAGE_PRECISION=fp32`` serves exactly that index.

    .venv/bin/python benchmarks/image_precision.py --cache-dir var/cache --mixed-cache var/cache-mixed \\
        --out docs/results/image-int8/cosines.json

``--table DIR`` instead prints the served recalls of ``DIR/{flickr,wide}-{fp32,int8,mixed}.json`` side by side,
with the label-bridge baseline's ``DIR/{flickr,wide}-label-bridge-{fp32,int8}.json`` (docs/image-int8.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
from pathlib import Path

import numpy as np

from indexer.asset_paths import SHIPPED_STUDENT
from indexer.image_space import ImageSpace

ROOT = Path(__file__).resolve().parents[1]
NAME = "efficientnet-lite2"


def read_features(path: Path) -> dict[str, bytes]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, vector FROM features"))


def stats(values: np.ndarray) -> dict[str, float]:
    return {
        "min": round(float(values.min()), 4),
        "p1": round(float(np.percentile(values, 1)), 4),
        "p5": round(float(np.percentile(values, 5)), 4),
        "median": round(float(np.median(values)), 4),
        "mean": round(float(values.mean()), 4),
    }


def recall_table(results: Path) -> str:
    """Per data set and language: mR and text→image R@10 of fp32, int8 and the half-and-half index, and the
    zero-training label-bridge baseline's R@10 in fp32 and int8 (``{set}-label-bridge-{precision}.json``)."""
    runs = ("fp32", "int8", "mixed", "label-bridge-fp32", "label-bridge-int8")
    lines = [
        "| dev set | language | queries | mR fp32 | mR int8 | mR mixed | t2i R@10 fp32 | int8 | mixed "
        "| label-bridge R@10 fp32 | int8 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for data_set in ("flickr", "wide"):
        got = {run: json.loads((results / f"{data_set}-{run}.json").read_text()) for run in runs}
        for lang, block in got["fp32"]["languages"].items():
            mr = [got[run]["languages"][lang]["mR"] for run in runs[:3]]
            r10 = [got[run]["languages"][lang]["t2i"]["r10"] for run in runs]
            cells = " | ".join(f"{value:.3f}" for value in mr + r10)
            lines.append(f"| {data_set} | {lang} | {block['queries']} | {cells} |")
        a = [got[run]["A"] for run in runs[:3]]
        baseline = " | ".join(f"A {got[run]['A']:.4f}" for run in runs[3:])
        lines.append(
            f"| {data_set} | **A** (mean mR) | | " + " | ".join(f"**{v:.4f}**" for v in a) + f" | | | | {baseline} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", type=Path, default=None, help="Print the recall table of these results.")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "var" / "cache")
    parser.add_argument("--mixed-cache", type=Path, default=None, help="Write the half-int8 cache folder here.")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.table:
        print(recall_table(args.table))
        return

    features = args.cache_dir / "features"
    fp32, int8 = read_features(features / f"{NAME}.sqlite"), read_features(features / f"{NAME}-int8.sqlite")
    keys = sorted(set(fp32) & set(int8))
    if not keys:
        raise SystemExit(f"no photo has both fp32 and int8 features in {features}: run polyglot evaluate with both")
    a = np.stack([np.frombuffer(fp32[key], dtype=np.float32) for key in keys])
    b = np.stack([np.frombuffer(int8[key], dtype=np.float32) for key in keys])
    raw = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    config = json.loads((SHIPPED_STUDENT / "config.json").read_text(encoding="utf-8"))
    space = ImageSpace.from_config(config["image_space"])
    sa, sb = space.apply(a), space.apply(b)
    served = (sa * sb).sum(axis=1)
    others = sa @ sa.T
    np.fill_diagonal(others, -1.0)
    report = {
        "photos": len(keys),
        "cosine_fp32_int8_raw": stats(raw),
        "cosine_fp32_int8_image_space": stats(served),
        "cosine_nearest_other_photo_image_space": stats(others.max(axis=1)),
        "command": "python benchmarks/image_precision.py " + " ".join(sys.argv[1:]),
    }
    print(json.dumps(report, indent=2))
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if args.mixed_cache:
        shutil.rmtree(args.mixed_cache, ignore_errors=True)
        shutil.copytree(args.cache_dir, args.mixed_cache)  # with the SQLite WAL files: no writer is running
        half = keys[::2]
        with sqlite3.connect(args.mixed_cache / "features" / f"{NAME}.sqlite") as db:
            db.executemany("UPDATE features SET vector = ? WHERE key = ?", [(int8[key], key) for key in half])
        print(f"wrote {args.mixed_cache}: {len(half)} of {len(keys)} photos' fp32 features replaced by int8")


if __name__ == "__main__":
    main()
