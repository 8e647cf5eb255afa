"""Search latency and recall@10 through the Milvus backend against FAISS, at 100K vectors.

    cd /work/wtNN && PYTHONPATH=$PWD OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python benchmarks/vector_backends.py \\
        --n 100000 --queries 200 --out benchmarks/vector_backends.json

Collection: benchmarks/scale_data.py's (the 6,993 real 1,280-d image vectors of the shipped index + synthetic ones
from the Gaussian mixture fitted on them); queries: dev captions embedded by the shipped tower; truth: exact
inner-product top 10. Backends, through the classes ``ImageIndex`` searches with (one query per call, as /search):
FAISS ``flat`` (exact) and ``hnsw`` (what the kind rule picks at 100K), Milvus ``flat`` and ``hnsw`` (same M,
efConstruction, ef) on a Milvus 2.3.5 standalone server process started here (the ``milvus`` package; stock config
unless ``--tick-ms``; searches at ``--consistency``, ``Session`` unless given), over gRPC on 127.0.0.1. Build times are reported but were taken
with the machine shared; the latency phase runs under /tmp/QUIET (see the brief) and the load average is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import scale_data

from indexer.settings import Settings
from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.milvus_vectors import MilvusVectors
from indexer.store.vectors import VectorIndex

K = 10
QUIET = Path("/tmp/QUIET")


@contextmanager
def quiet() -> Iterator[None]:
    """Hold /tmp/QUIET while timing (others pause heavy jobs); wait while someone else holds it."""
    while QUIET.exists():
        time.sleep(30)
    QUIET.write_text(f"vector_backends.py pid {os.getpid()}\n")
    try:
        yield
    finally:
        QUIET.unlink(missing_ok=True)


def measure(search: Callable[[np.ndarray], list[int]], queries: np.ndarray, truth: np.ndarray) -> dict[str, Any]:
    for query in queries[:10]:  # warm-up
        search(query)
    times, recalls = [], []
    for query, exact in zip(queries, truth, strict=True):
        start = time.perf_counter()
        found = search(query)
        times.append(time.perf_counter() - start)
        recalls.append(len(set(found) & set(exact.tolist())) / K)
    ms = np.asarray(times) * 1000
    return {
        "recall_at_10": round(float(np.mean(recalls)), 4),
        "latency_ms_p50": round(float(np.percentile(ms, 50)), 2),
        "latency_ms_p95": round(float(np.percentile(ms, 95)), 2),
        "latency_ms_mean": round(float(ms.mean()), 2),
    }


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (the Milvus server: what a query node holds for the collection)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def start_milvus(folder: Path, tick_ms: int | None) -> Any:
    from milvus import MilvusServer

    server = MilvusServer()
    if tick_ms is not None:  # proxy.timeTickInterval: how long a Strong read may wait (stock: 200 ms)
        server.config.set("proxy.timeTickInterval", tick_ms)
    server.set_base_dir(str(folder))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        server.listen_port = int(sock.getsockname()[1])
    server.start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, default=Path("var/bench-vector-backends"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/vector_backends.json"))
    parser.add_argument("--consistency", choices=["Strong", "Session", "Bounded"], default="Session")
    parser.add_argument("--tick-ms", type=int, help="Milvus proxy.timeTickInterval (default: stock, 200 ms)")
    parser.add_argument("--skip-faiss-hnsw", action="store_true", help="only FAISS flat (the exact reference)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    real = scale_data.real_vectors(Settings().resolved_index_dir)
    queries = scale_data.query_vectors(args.queries, args.work)
    model = scale_data.MixtureModel(real)
    data_path = args.work / f"collection-{args.n}.f32"
    truth_rows = scale_data.write_collection(data_path, real, model, args.n, queries, K)
    data = np.ascontiguousarray(scale_data.open_collection(data_path, real.shape[1]))
    ids = np.arange(1, len(data) + 1, dtype=np.int64)  # SQL-like ids
    truth = ids[truth_rows]
    tuning = VectorIndexSettings()
    results: dict[str, Any] = {"n": args.n, "dim": int(data.shape[1]), "queries": len(queries), "k": K}
    builds: dict[str, float] = {}
    stores: dict[str, Any] = {}
    for kind in ("flat",) if args.skip_faiss_hnsw else ("flat", "hnsw"):
        start = time.perf_counter()
        stores[f"faiss-{kind}"] = VectorIndex.build(ids, data, kind, tuning)
        builds[f"faiss-{kind}"] = time.perf_counter() - start
        print(f"built faiss-{kind} in {builds[f'faiss-{kind}']:.1f} s", flush=True)
    server = start_milvus(Path(tempfile.mkdtemp(prefix="bench-milvus-")), args.tick_ms)
    try:
        uri = f"http://127.0.0.1:{server.listen_port}"
        flat = VectorIndexSettings(
            backend="milvus",
            milvus_uri=uri,
            milvus_index="flat",
            milvus_collection="bench",
            milvus_consistency=args.consistency,
        )
        empty_rss = rss_bytes(server.server_proc.pid)
        start = time.perf_counter()
        milvus_flat = MilvusVectors.new_generation(data.shape[1], flat)
        milvus_flat.add(ids, data)
        milvus_flat.client.flush(milvus_flat.collection)
        builds["milvus-flat (insert + flush)"] = time.perf_counter() - start
        print(f"inserted into milvus in {builds['milvus-flat (insert + flush)']:.1f} s", flush=True)
        rss = {"milvus-flat": (rss_bytes(server.server_proc.pid) - empty_rss) / len(data)}
        with quiet():
            results["load_before"] = os.getloadavg()
            for name, store in stores.items():
                results[name] = measure(lambda q, s=store: s.search(q[None], K)[0].ids, queries, truth)
                print(name, results[name], flush=True)
            results["milvus-flat"] = measure(lambda q: milvus_flat.search(q[None], K)[0].ids, queries, truth)
            print("milvus-flat", results["milvus-flat"], flush=True)
        # The same rows, indexed by HNSW instead: release, swap the index, load (Milvus builds it per segment).
        client, collection = milvus_flat.client, milvus_flat.collection
        start = time.perf_counter()
        client.release_collection(collection)
        client.drop_index(collection, "vector")
        hnsw = flat.model_copy(update={"milvus_index": "hnsw"})
        params = client.prepare_index_params()
        params.add_index(
            field_name="vector",
            index_type="HNSW",
            metric_type="IP",
            params={"M": hnsw.hnsw_m, "efConstruction": hnsw.hnsw_ef_construction},
        )
        client.create_index(collection, params)
        client.load_collection(collection)
        builds["milvus-hnsw (index + load)"] = time.perf_counter() - start
        print(f"milvus hnsw built in {builds['milvus-hnsw (index + load)']:.1f} s", flush=True)
        milvus_hnsw = MilvusVectors(client, collection, data.shape[1], hnsw)
        rss["milvus-hnsw"] = (rss_bytes(server.server_proc.pid) - empty_rss) / len(data)
        results["milvus_server_rss_bytes_per_vector"] = {name: round(value) for name, value in rss.items()}
        with quiet():
            results["milvus-hnsw"] = measure(lambda q: milvus_hnsw.search(q[None], K)[0].ids, queries, truth)
            results["load_after"] = os.getloadavg()
            print("milvus-hnsw", results["milvus-hnsw"], flush=True)
        milvus_hnsw.drop()
    finally:
        server.stop()
    results["build_seconds"] = {name: round(seconds, 1) for name, seconds in builds.items()}
    results["settings"] = {
        "hnsw_m": tuning.hnsw_m,
        "ef_construction": tuning.hnsw_ef_construction,
        "ef_search": tuning.hnsw_ef_search,
        "milvus_consistency": args.consistency,
        "milvus_time_tick_ms": args.tick_ms or 200,
    }
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
