"""Search latency through ``ImageIndex.search`` (the one method the query side calls), unfiltered and filtered.

Builds once, in ``--work``, an index folder as ``polyglot index add`` leaves it (sidecar, SQLite metadata with
capture times and folders, vectors of the kind asked for: ``pq-refine`` is what a few thousand photos get,
``ivf-pq-mmap`` what a library beyond 100,000 gets), opens it with ``ImageIndex.open`` as the service does, then
times ``--queries`` random unit queries (k = 20, one thread): unfiltered, and restricted to the ids of a 1 % date
range and of one folder of 100 (``allowed=`` from ``MetadataStore.filtered_ids``, which is timed apart). This is
the facade's path (lock, dimension check, backend search, hits); ``benchmarks/filtered_search.py`` times the
vector store alone. Run from the repository root::

    .venv/bin/python benchmarks/index_search.py --n 20000 --kind pq-refine --work /tmp/index-search-20k
    .venv/bin/python benchmarks/index_search.py --n 150000 --kind ivf-pq-mmap --work /tmp/index-search-150k
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from filtered_search import write_synthetic_rows  # benchmarks/ is the script's folder, first on sys.path

from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.search_filters import PhotoFilter
from indexer.settings import Settings
from indexer.store.index_kinds import MMAP_KIND, VectorIndexSettings
from indexer.store.metadata import MetadataStore, sqlite_url
from indexer.store.sidecar import Sidecar
from indexer.store.vector_files import FAISS_NAME, GENERATIONS_DIR, MmapBuilder
from indexer.store.vectors import VectorIndex

DIM = 1280
K = 20
START = datetime(2015, 1, 1)
SPAN_DAYS = 3650
CHUNK = 50_000
ENCODER = "efficientnet-lite2"  # named in the sidecar; never loaded (searches take vectors)
SPACE = ImageSpace("l2")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build(folder: Path, n: int, kind: str, settings: VectorIndexSettings) -> float:
    """The index folder: SQL rows 1..n, their vectors under the same ids, the sidecar naming both."""
    if (folder / "index.json").exists():
        return 0.0
    began = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    store = MetadataStore(sqlite_url(folder / "metadata.sqlite"))
    write_synthetic_rows(store, n, rng, places=False)
    store.close()
    if kind == MMAP_KIND:
        builder = MmapBuilder(folder, DIM, settings)
        for start in range(0, n, CHUNK):
            count = min(CHUNK, n - start)
            builder.append(np.arange(start + 1, start + 1 + count), unit(rng, count))
        generation = builder.finish()
        files = f"{GENERATIONS_DIR}/{generation.folder.name}"
    else:
        VectorIndex.build(np.arange(1, n + 1), unit(rng, n), kind, settings).save(folder / FAISS_NAME)
        files = FAISS_NAME
    sidecar = Sidecar(
        image_encoder=ENCODER,
        dim=DIM,
        index_type=kind,
        image_space={**SPACE.to_config(), "fingerprint": SPACE.fingerprint},
        count=n,
        files={"vectors": files, "metadata": "metadata.sqlite"},
    )
    sidecar.save(folder)
    return time.perf_counter() - began


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--kind", default="pq-refine", choices=["flat", "pq-refine", "hnsw", MMAP_KIND])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3, help="Passes over the queries; the median pass is kept.")
    parser.add_argument("--work", type=Path, default=Path("/tmp/index-search"))
    parser.add_argument("--out", type=Path, default=None, help="Markdown file to write (printed either way).")
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(1)
    vector_settings = VectorIndexSettings(kind=args.kind)
    built_s = build(args.work, args.n, args.kind, vector_settings)
    settings = Settings(
        home=args.work,
        index_dir=args.work,
        cache_dir=args.work / "cache",
        image_encoder=ENCODER,
        vector_index=vector_settings,
    )
    load_start = os.getloadavg()[0]
    cpu_start = time.process_time()
    began = time.perf_counter()
    index = ImageIndex.open(settings, image_space=SPACE, create=False)
    open_ms = (time.perf_counter() - began) * 1000
    queries = unit(np.random.default_rng(1), args.queries)
    day = SPAN_DAYS / 100
    filters = {
        "none": None,
        "date range, 1 %": PhotoFilter(START + timedelta(days=1000), START + timedelta(days=1000 + day)),
        "one folder of 100 (1 %)": PhotoFilter(folder="/photos/f42"),
    }
    rows: list[dict[str, Any]] = []
    for name, where in filters.items():
        allowed = index.store.filtered_ids(where) if where is not None else None
        passes = []
        for _ in range(args.repeats):
            times = []
            for query in queries:
                t0 = time.perf_counter()
                hits = index.search(query, K, allowed=allowed)[0]
                times.append((time.perf_counter() - t0) * 1000)
                assert len(hits) == K, (name, len(hits))
            passes.append(times)
        kept = sorted(passes, key=statistics.median)[len(passes) // 2]
        rows.append({"filter": name, "matching": args.n if allowed is None else len(allowed), "ms": kept})
    index.close()
    cpu_s = time.process_time() - cpu_start
    command = ".venv/bin/python benchmarks/index_search.py " + " ".join(sys.argv[1:])
    lines = [
        f"# `ImageIndex.search` latency: {args.n:,} photos, `{args.kind}`",
        "",
        f"Command: `{command}`  ",
        f"{args.queries} random unit queries × {args.repeats} passes (median pass kept), k = {K}, one thread; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load_start:.2f} at the start and "
        f"{os.getloadavg()[0]:.2f} at the end on {os.cpu_count()} CPUs; open {open_ms:.0f} ms; "
        f"process CPU {cpu_s:.1f} s; built in {built_s:.0f} s (0: reused).",
        "",
        "| filter | photos searched | p50 ms | p90 ms | p99 ms | mean ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        ms = row["ms"]
        lines.append(
            f"| {row['filter']} | {row['matching']:,} | {pct(ms, 50):.3f} | {pct(ms, 90):.3f} | {pct(ms, 99):.3f} "
            f"| {statistics.fmean(ms):.3f} |"
        )
    raw = {row["filter"]: {"p50": pct(row["ms"], 50), "mean": statistics.fmean(row["ms"])} for row in rows}
    lines += ["", "```json", json.dumps(raw, indent=1), "```", ""]
    text = "\n".join(lines)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
