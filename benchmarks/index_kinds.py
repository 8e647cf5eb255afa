"""Index kinds on a real collection: recall against exhaustive search, exactness of scores, search time.

Run from the repository root (results go to benchmarks/index_kinds.md)::

    .venv/bin/python benchmarks/index_kinds.py --queries 800

The vectors are those of the index in POLYGLOT_INDEX_DIR (``var/index``: the 6,993 photos of the shared data);
the queries are dev-split captions in the languages ``/search`` accepts, embedded by the service's query pipeline
with the current settings (each in its language). Every kind is built from the
same vectors with its default settings; recall@k = overlap with the exhaustive (``flat``) top k.

Search times are medians per call, one thread, with the last-level cache flushed before each call (a 64 MB
array is read): in the service the text encoder and the tower run between two searches and evict the vectors,
so warm-cache timings would flatter the kinds that read the most memory.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.settings import Settings
from indexer.store.sidecar import Sidecar
from indexer.store.vector_files import FAISS_NAME
from indexer.store.vectors import VectorIndex

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "m30k-f8k"
KINDS = ("flat", "pq-refine", "hnsw")


def dev_captions(data: Path, pipeline: QueryPipeline, limit: int) -> list[tuple[str, str]]:
    """Shuffled (text, lang) dev captions in the languages the served pipeline accepts."""
    dev = set((data / "splits" / "dev.txt").read_text(encoding="utf-8").split())
    pairs = []
    with (data / "captions.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["image"] in dev and pipeline.supports(row["lang"]):
                pairs.append((row["text"], row["lang"]))
    random.Random(0).shuffle(pairs)
    return pairs[:limit]


def timed(index: VectorIndex, queries: np.ndarray, batch: int, k: int, calls: int, flush: np.ndarray) -> float:
    times = []
    for call in range(calls):
        start = (call * batch) % (len(queries) - batch)
        flush.sum()  # evict the index from the cache, as the encoder and the tower do in the service
        began = time.perf_counter()
        index.search(queries[start : start + batch], k)
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--queries", type=int, default=800)
    parser.add_argument("--calls", type=int, default=200, help="Timed calls per kind and batch size.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "index_kinds.json")
    parser.add_argument("--md", type=Path, default=ROOT / "benchmarks" / "index_kinds.md")
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)  # as each search worker of the service
    faiss.cvar.distance_compute_blas_threshold = 2  # as the service: batches use BLAS

    settings = Settings()
    folder = settings.resolved_index_dir
    sidecar = Sidecar.load(folder)
    if sidecar is None:
        raise SystemExit(f"no index in {folder}: run `polyglot index add` first")
    stored = VectorIndex.load(folder / FAISS_NAME, sidecar.index_type, settings.vector_index)
    ids = stored.ids()
    vectors = stored.reconstruct_many(ids)
    row_of = {int(i): row for row, i in enumerate(ids)}
    # The queries are what /search embeds with these settings (each caption in its language).
    pipeline = QueryPipeline(load_models(settings), settings, QueryCache(0))
    pairs = dev_captions(args.data, pipeline, args.queries)
    queries = pipeline.embed_queries([text for text, _ in pairs], [lang for _, lang in pairs])
    flush = np.ones(64_000_000 // 8)

    rows: list[dict[str, Any]] = []
    reference: dict[int, list[list[int]]] = {}
    for kind in KINDS:
        began = time.perf_counter()
        index = VectorIndex.build(ids, vectors, kind, settings.vector_index)
        build_s = time.perf_counter() - began
        row: dict[str, Any] = {"kind": kind, "build_s": round(build_s, 2)}
        for k in (20, 100):
            results = index.search(queries, k)
            if kind == "flat":
                reference[k] = [r.ids for r in results]
            overlap = [len(set(r.ids) & set(want)) / k for r, want in zip(results, reference[k], strict=True)]
            row[f"recall@{k}"] = round(float(np.mean(overlap)), 4)
            row[f"queries_exact_top{k}"] = int(sum(o == 1.0 for o in overlap))
        # Are the returned scores the exact cosines? (largest gap to the float32 inner product)
        top = index.search(queries, 20)
        gaps = [
            abs(score - float(vectors[row_of[i]] @ queries[q]))
            for q, r in enumerate(top)
            for i, score in zip(r.ids, r.scores, strict=True)
        ]
        row["max_score_error"] = float(f"{max(gaps):.2g}")
        for batch in (1, 4, 8):
            row[f"ms_batch{batch}"] = round(timed(index, queries, batch, 20, args.calls, flush), 3)
        row["bytes_per_image"] = round(len(index.to_bytes()) / len(ids), 1)
        print(json.dumps(row), flush=True)
        rows.append(row)

    report: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", *sys.argv]),
        "images": len(ids),
        "dim": int(vectors.shape[1]),
        "queries": len(queries),
        "query_model": pipeline.models.label,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_1m": os.getloadavg()[0]},
        "results": rows,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# Index kinds on the shared collection",
        "",
        f"Command: `{report['command']}`",
        "",
        f"{report['images']:,} photos ({report['dim']}-d vectors of the index), {report['queries']} dev captions as "
        f"queries (embedded by the served pipeline: {report['query_model']}), recall against the exhaustive `flat` top k. Search: "
        f"median ms per call, one thread, last-level cache flushed before each call. Machine: "
        f"{report['machine']['cpus']} CPUs, load average {report['machine']['load_avg_1m']:.1f}.",
        "",
        "| kind | recall@20 | queries with the exact top 20 | recall@100 | largest score error | search ms, 1 query |"
        " 4 queries | 8 queries | bytes per image (file) | build s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| `{r['kind']}` | {r['recall@20']:.4f} | {r['queries_exact_top20']} / {len(queries)} | "
            f"{r['recall@100']:.4f} | {r['max_score_error']:g} | {r['ms_batch1']} | {r['ms_batch4']} | "
            f"{r['ms_batch8']} | {r['bytes_per_image']:,} | {r['build_s']} |"
        )
    args.md.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
