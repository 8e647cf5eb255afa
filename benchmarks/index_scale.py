"""Index kinds from 10 thousand to a million photos: build time, RAM and disk per photo, start-up time,
single-query latency (1 and 2 threads) and recall@10 against exact search on the same vectors.

Run from the repository root (the real vectors come from the index in POLYGLOT_INDEX_DIR, the 6,993 photos of
the shared data; queries need the bundled mUSE model, POLYGLOT_MODELS_DIR)::

    .venv/bin/python benchmarks/index_scale.py --sizes 10000,100000,1000000 --queries 200 \\
        --json benchmarks/index_scale.json --md benchmarks/index_scale.md --plot benchmarks/index_scale.png

Collections: the real vectors + synthetic ones drawn from a Gaussian fitted on them (benchmarks/scale_data.py
says how); ids are row numbers. Each kind is built in this process, then opened and queried in a fresh one
(``--measure``) so that its memory can be read from /proc: RAM per photo = growth of the anonymous resident
memory (RssAnon) from before the index is opened to after all queries, divided by the size. Memory-mapped
vectors are page cache (RssFile): shared, reclaimable, reported apart. Before opening, the index files are
dropped from the page cache (posix_fadvise), so ``open_s`` is a cold start and the first pass over the queries
is a cold-cache one (``cold_p50_ms``); the timed passes follow with the cache warm.
"""

from __future__ import annotations

import os

# Sleep, not spin, while waiting at OpenMP barriers: on a shared, busy machine spinning threads slow builds down
# many times over. Read when FAISS loads, hence before the imports.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse
import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import scale_data
from scale_plot import plot
from scale_report import markdown

from indexer.settings import Settings
from indexer.store.index_kinds import MMAP_KIND, VectorIndexSettings, choose_kind
from indexer.store.mmap_index import MmapIvfIndex
from indexer.store.vector_files import MmapBuilder
from indexer.store.vectors import VectorIndex

ROOT = Path(__file__).resolve().parents[1]
K = 10


def variant(kind: str) -> tuple[str, VectorIndexSettings]:
    """``ivf-pq-mmap:f16`` = the ivf-pq-mmap kind with a float16 vector file; other names are plain kinds."""
    base, _, suffix = kind.partition(":")
    settings = VectorIndexSettings()
    if suffix == "f16":
        settings = settings.model_copy(update={"mmap_dtype": "float16"})
    return base, settings


def build(kind: str, data: np.ndarray, folder: Path) -> float:
    base, settings = variant(kind)
    began = time.perf_counter()
    if base == MMAP_KIND:
        builder = MmapBuilder(folder, data.shape[1], settings)
        for start in range(0, len(data), scale_data.CHUNK):
            chunk = np.asarray(data[start : start + scale_data.CHUNK])
            builder.append(np.arange(start, start + len(chunk)), chunk)
        builder.finish()
    else:
        VectorIndex.build(np.arange(len(data)), data, base, settings).save(folder / "vectors.faiss")
    return time.perf_counter() - began


def memory() -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) * 1024 for key in ("RssAnon", "RssFile")}


def evict(folder: Path) -> None:
    """Drop this index's files (only them) from the page cache: a cold start without touching other users."""
    for path in folder.rglob("*"):
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def latencies(index: Any, queries: np.ndarray) -> tuple[list[float], list[list[int]]]:
    times, found = [], []
    for query in queries:
        began = time.perf_counter()
        result = index.search(query[None, :], K)[0]
        times.append((time.perf_counter() - began) * 1000)
        found.append(result.ids)
    return times, found


def recall(found: list[list[int]], truth: np.ndarray) -> float:
    return float(np.mean([len(set(ids) & set(want.tolist())) / K for ids, want in zip(found, truth, strict=True)]))


def pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(values, q)), 3)


def measure(folder: Path, kind: str, work: Path, n: int) -> dict[str, Any]:
    """Runs in a fresh process: open the index cold, query it, read the memory it took."""
    base, settings = variant(kind)
    queries, truth = np.load(work / "queries.npy"), np.load(work / f"truth-{n}.npy")
    faiss.omp_set_num_threads(1)
    evict(folder)
    before = memory()
    began = time.perf_counter()
    if base == MMAP_KIND:
        index: Any = MmapIvfIndex.open(next((folder / MMAP_KIND).iterdir()), settings)
    else:
        index = VectorIndex.load(folder / "vectors.faiss", base, settings)
    row: dict[str, Any] = {"open_s": round(time.perf_counter() - began, 3)}
    cold, _ = latencies(index, queries)
    warm, found = latencies(index, queries)
    faiss.omp_set_num_threads(2)
    two, _ = latencies(index, queries)
    after = memory()
    row.update(
        recall_at_10=round(recall(found, truth), 4),
        p50_ms=pct(warm, 50),
        p99_ms=pct(warm, 99),
        p50_ms_2t=pct(two, 50),
        p99_ms_2t=pct(two, 99),
        cold_p50_ms=pct(cold, 50),
        cold_p99_ms=pct(cold, 99),
        ram_bytes_per_image=round((after["RssAnon"] - before["RssAnon"]) / n, 1),
        page_cache_bytes_per_image=round((after["RssFile"] - before["RssFile"]) / n, 1),
    )
    if base == MMAP_KIND:  # how recall and time move with the search settings (no rebuild needed)
        faiss.omp_set_num_threads(1)
        nlist, sweep = int(index.codes.nlist), []
        for nprobe in sorted({max(1, round(nlist / f)) for f in (16, 8, 4, 3)}):
            for rerank in (10, 30):
                index.settings = settings.model_copy(update={"mmap_rerank": rerank})
                index.codes.nprobe = nprobe
                times, hits = latencies(index, queries)
                sweep.append(
                    {
                        "nlist": nlist,
                        "nprobe": nprobe,
                        "rerank": rerank,
                        "p50_ms": pct(times, 50),
                        "p99_ms": pct(times, 99),
                        "recall_at_10": round(recall(hits, truth), 4),
                    }
                )
        row["sweep"] = sweep
        index.settings = settings
        began = time.perf_counter()  # one photo in and out, durable (fsync'ed rows and tombstone), no rebuild
        index.add([n + 1], queries[:1])
        index.commit()
        row["add_one_ms"] = round((time.perf_counter() - began) * 1000, 2)
        began = time.perf_counter()
        index.remove([n + 1])
        row["delete_one_ms"] = round((time.perf_counter() - began) * 1000, 2)
    return row


def run_size(n: int, kinds: list[str], work: Path, real: np.ndarray, model: scale_data.GaussianModel) -> list[dict]:
    queries = np.load(work / "queries.npy")
    data_path = work / f"collection-{n}.f32"
    began = time.perf_counter()
    truth = scale_data.write_collection(data_path, real, model, n, queries, K)
    np.save(work / f"truth-{n}.npy", truth)
    print(f"n={n:,}: collection written in {time.perf_counter() - began:.1f} s", flush=True)
    data = scale_data.open_collection(data_path, real.shape[1])
    runs = []
    for kind in kinds:
        folder = work / f"index-{n}-{kind.replace(':', '-')}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        build_s = build(kind, data, folder)
        command = [
            sys.executable,
            __file__,
            "--measure",
            str(folder),
            "--kind",
            kind,
            "--n",
            str(n),
            "--work",
            str(work),
        ]
        measured = json.loads(
            subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()[-1]
        )
        disk = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        base, settings = variant(kind)
        run = {
            "n": n,
            "kind": kind,
            "chosen": choose_kind(n, VectorIndexSettings()) == base
            and settings.mmap_dtype == VectorIndexSettings().mmap_dtype,
            "build_s": round(build_s, 2),
            "disk_bytes_per_image": round(disk / n, 1),
            **measured,
        }
        print(json.dumps({key: value for key, value in run.items() if key != "sweep"}), flush=True)
        runs.append(run)
        shutil.rmtree(folder, ignore_errors=True)
    data_path.unlink()
    return runs


def calibration(real: np.ndarray, model: scale_data.GaussianModel, queries: np.ndarray) -> dict[str, Any]:
    """Are the synthetic vectors as hard to search as the real ones? 6,993 of each, the same queries, an inverted
    file of 128 lists probed 4 and 16 deep (exact distances: only the partition is tested)."""
    rng = np.random.default_rng(1)
    collections = {
        "real": real,
        "mixture (used)": model.sample(len(real), rng),
        "one Gaussian": scale_data.GaussianModel(real).sample(len(real), rng),
    }
    out: dict[str, Any] = {}
    for name, data in collections.items():
        scores = queries @ data.T
        truth = np.argsort(-scores, axis=1)[:, :K]
        top = -np.sort(-scores, axis=1)
        neighbours = data[:1000] @ data.T
        np.fill_diagonal(neighbours[:, :1000], -1)
        ivf = faiss.index_factory(data.shape[1], "IVF128,Flat", faiss.METRIC_INNER_PRODUCT)
        ivf.train(data)
        ivf.add(data)
        row: dict[str, Any] = {
            "top1_cosine": round(float(top[:, 0].mean()), 4),
            "top10_cosine": round(float(top[:, 9].mean()), 4),
            "nn_cosine": round(float(neighbours.max(axis=1).mean()), 4),
        }
        for nprobe in (4, 16):
            ivf.nprobe = nprobe
            found = ivf.search(queries, K)[1]
            row[f"ivf128_nprobe{nprobe}_recall"] = round(recall([list(f) for f in found], truth), 4)
        out[name] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--kinds", default=f"{MMAP_KIND},{MMAP_KIND}:f16", help="Kinds (ivf-pq-mmap:f16: float16 file)."
    )
    parser.add_argument(
        "--in-ram-max", type=int, default=100_000, help="Kinds that keep float vectors in RAM: only up to this size."
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/index_scale"), help="Scratch folder (GBs at 1M).")
    parser.add_argument("--calibrate", action="store_true", help="Also compare real and synthetic collections.")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "index_scale.json")
    parser.add_argument("--md", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, args.kind, args.work, args.n)))
        return
    started = time.perf_counter()
    faiss.omp_set_num_threads(os.cpu_count() or 1)  # builds use every core; searches are measured at 1 and 2
    args.work.mkdir(parents=True, exist_ok=True)
    real = scale_data.real_vectors(Settings().resolved_index_dir)
    queries = scale_data.query_vectors(args.queries, args.work)
    np.save(args.work / "queries.npy", queries)
    model = scale_data.MixtureModel(real)
    report: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "benchmarks/index_scale.py", *sys.argv[1:]]),
        "real_images": len(real),
        "dim": int(real.shape[1]),
        "queries": len(queries),
        "k": K,
        "settings": VectorIndexSettings().model_dump(),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_avg_start": os.getloadavg()[0]},
        "runs": [],
    }
    if args.calibrate:
        report["calibration"] = calibration(real, model, queries)
        print(json.dumps(report["calibration"]), flush=True)
    for n in [int(size) for size in args.sizes.split(",")]:
        kinds = [k for k in args.kinds.split(",") if k.startswith(MMAP_KIND) or n <= args.in_ram_max]
        report["runs"] += run_size(n, kinds, args.work, real, model)
    report["machine"]["load_avg_end"] = os.getloadavg()[0]
    report["seconds"] = round(time.perf_counter() - started, 1)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    if args.md:
        args.md.write_text(markdown(report))
    if args.plot:
        plot(report["runs"], args.plot)
    print(f"done in {report['seconds']} s")


if __name__ == "__main__":
    main()
