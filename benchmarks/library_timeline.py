"""What browsing a large library costs (issue 36): ``GET /library``'s page and ``/library/months``' counts on the
SQL store alone, for a library of ``--n`` photos (SQLite in a scratch folder; no vectors needed).

The photos get capture times over ten years (``--undated`` of them none, ordered by file time instead) in 1,000
folders. Timed, each ``--repeats`` times (median): the first page, a page 100 pages deep (the keyset cursor: no
OFFSET), a page filtered to one folder (0.1 %: the scan reads batches until the page is full), the month counts
unfiltered and filtered::

    .venv/bin/python benchmarks/library_timeline.py --n 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from indexer.search_filters import PhotoFilter
from indexer.store.metadata import MetadataStore, NewImage, sqlite_url
from indexer.store.timeline import TimelineKey, month_counts, timeline_page


def fill(store: MetadataStore, n: int, undated: float, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    start = datetime(2015, 1, 1)
    seconds = rng.integers(0, 10 * 365 * 86_400, n)
    dated = rng.random(n) >= undated
    batch = []
    for i in range(n):
        moment = start + timedelta(seconds=int(seconds[i]))
        folder = f"/photos/f{i % 1000:04d}"
        batch.append(
            NewImage(
                f"{folder}/{i}.jpg",
                f"{i:064x}",
                4000,
                3000,
                3_000_000,
                folder=folder,
                taken_at=moment if dated[i] else None,
                file_modified_at=moment,
            )
        )
        if len(batch) == 5_000:
            store.insert(batch)
            batch = []
    if batch:
        store.insert(batch)


def timed(work: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--undated", type=float, default=0.1)
    parser.add_argument("--k", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="library-timeline-") as scratch:
        store = MetadataStore(sqlite_url(Path(scratch) / "meta.sqlite"))
        began = time.perf_counter()
        fill(store, args.n, args.undated)
        print(f"{args.n:,} photos stored in {time.perf_counter() - began:.1f} s; load average {os.getloadavg()}")
        deep: TimelineKey | None = None
        for _ in range(100):
            deep = timeline_page(store, args.k, deep)[1]
        folder = PhotoFilter.parse(folder="/photos/f0007")
        allowed = store.filtered_ids(folder)
        rows = [
            ("first page", lambda: timeline_page(store, args.k)),
            ("page 101 (cursor)", lambda: timeline_page(store, args.k, deep)),
            (f"one folder ({len(allowed):,} photos), first page", lambda: timeline_page(store, args.k, None, allowed)),
            (
                "one folder: its ids (SQL) + first page",
                lambda: timeline_page(store, args.k, None, store.filtered_ids(folder)),
            ),
            ("months, unfiltered", lambda: month_counts(store)),
            ("months, one folder", lambda: month_counts(store, allowed)),
        ]
        print(f"| what (k = {args.k}) | median ms of {args.repeats} |\n| --- | ---: |")
        for name, work in rows:
            print(f"| {name} | {timed(work, args.repeats):.1f} |")
        print(f"load average after: {os.getloadavg()}")
        store.close()


if __name__ == "__main__":
    main()
