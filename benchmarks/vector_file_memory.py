"""Peak memory and time of saving and loading a flat FAISS vector file, each in a fresh process.

    .venv/bin/python benchmarks/vector_file_memory.py --photos 200000 --out benchmarks/vector_file_memory.md

Each step runs in its own interpreter so that ``ru_maxrss`` (the process's peak resident memory) shows what the step
itself adds: ``save`` builds the index in small parts first (its peak is then the index), then
``VectorIndex.save``; ``load`` is ``VectorIndex.load`` of that file. What a checkpoint of a long ``index add`` and a
server taking in another process's save cost in memory (indexer/store/vectors.py). Each step prints one JSON line
(``tests/collection/test_vectors.py`` runs this script on a small index and bounds what it prints).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEP = """
import json, resource, sys, time
from pathlib import Path
import numpy as np
from indexer.store.vectors import VectorIndex, VectorIndexSettings
what, path, photos = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
settings = VectorIndexSettings()
if what == "save":
    index = VectorIndex.create(1280, "flat", settings)
    rng = np.random.default_rng(0)
    for start in range(0, photos, 1000):
        rows = rng.standard_normal((min(1000, photos - start), 1280), dtype=np.float32)
        index.add(np.arange(start, start + len(rows)), rows / np.linalg.norm(rows, axis=1, keepdims=True))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if what == "save":
    index.save(path)
else:
    index = VectorIndex.load(path, "flat", settings)
seconds = time.perf_counter() - start
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
vectors = len(index)
print(json.dumps({"step": what, "seconds": seconds, "peak_growth_bytes": grown, "file_bytes": path.stat().st_size,
                  "vectors": vectors}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=int, default=200_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vector-file-") as scratch:
        path = Path(scratch) / "vectors.faiss"
        steps = []
        for what in ("save", "load"):
            done = subprocess.run(
                [sys.executable, "-c", STEP, what, str(path), str(args.photos)],
                capture_output=True,
                text=True,
                check=True,
            )
            steps.append(json.loads(done.stdout.splitlines()[-1]))
            print(json.dumps(steps[-1]), flush=True)
    command = ".venv/bin/python benchmarks/vector_file_memory.py " + " ".join(sys.argv[1:])
    lines = [
        "# Saving and loading a flat vector file: peak memory and time",
        "",
        f"Command: `{command.strip()}`  ",
        f"{args.photos:,} vectors of 1,280 floats, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "| step | file MB | peak memory added, MB | seconds |",
        "| --- | ---: | ---: | ---: |",
        *(
            f"| {s['step']} | {s['file_bytes'] / 1e6:.0f} | {s['peak_growth_bytes'] / 1e6:.0f} | {s['seconds']:.2f} |"
            for s in steps
        ),
        "",
    ]
    if args.out:
        args.out.write_text("\n".join(lines), encoding="utf-8")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
