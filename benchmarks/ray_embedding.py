"""Ray embedding throughput with 1 and 2 workers against the single-process indexer, on the same photos.

    cd /work/wtNN && PYTHONPATH=$PWD OMP_NUM_THREADS=1 POLYGLOT_MODELS_DIR=/work/main/var/models nice -n 10 \\
        .venv/bin/python benchmarks/ray_embedding.py --photos 1000 --out benchmarks/ray_embedding.json

The first ``--photos`` photos (by name) of the shared Multi30k/Flickr8k images, the real image encoder
(efficientnet-lite2 through ONNX Runtime, one intra-op thread per process: POLYGLOT_TORCH_THREADS=1), each run into
a fresh index folder and a fresh features cache (nothing is reused). ``single``: ``ImageIndex.add_paths`` (the
`polyglot index add` path: decode of the next batch overlapped with inference). ``ray-N``: ``add_with_ray`` with N
CPU actors on a local Ray cluster of 2 CPUs (``ray.init`` outside the timing; actor start and encoder loads inside),
then the same ``add_paths`` finding every feature in the cache. Reported: photos per second end to end, and for Ray
the embedding phase alone; then, per photo, whether Ray and the single process gave the same id and the cosine of
their vectors. The machine is shared: the load average is recorded before and after, under /tmp/QUIET.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from vector_backends import quiet

from indexer.distributed.ray_index import add_with_ray
from indexer.image_index import ImageIndex
from indexer.image_sources import Sources
from indexer.settings import Settings

PHOTOS = Path(__file__).resolve().parents[2] / "shared" / "data" / "m30k-f8k" / "images"


def settings_for(work: Path, name: str) -> Settings:
    return Settings(index_dir=work / name / "index", cache_dir=work / name / "cache", torch_threads=1)


def vectors(settings: Settings) -> dict[str, tuple[int, np.ndarray]]:
    with ImageIndex.open(settings, create=False) as index:
        return {r.path: (r.id, index.vector(r.id)) for r in index.list(limit=10**6)}  # type: ignore[misc]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=int, default=1000)
    parser.add_argument("--work", type=Path, default=Path("var/bench-ray"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/ray_embedding.json"))
    args = parser.parse_args()
    if args.work.exists():
        raise SystemExit(f"{args.work} exists: remove it (every run starts from an empty index and cache)")
    paths = sorted(PHOTOS.glob("*.jpg"))[: args.photos]
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    results: dict[str, Any] = {"photos": len(paths), "ray_init_seconds": round(time.perf_counter() - started, 1)}
    with quiet():
        results["load_before"] = os.getloadavg()
        settings = settings_for(args.work, "single")
        with ImageIndex.open(settings) as index:
            start = time.perf_counter()
            report = index.add_paths(paths, progress=False)
            seconds = time.perf_counter() - start
        results["single"] = {"seconds": round(seconds, 1), "photos_per_s": round(report.added / seconds, 2)}
        print("single", results["single"], flush=True)
        for workers in (1, 2):
            with ImageIndex.open(settings_for(args.work, f"ray-{workers}")) as index:
                start = time.perf_counter()
                report, run = add_with_ray(index, Sources(paths=list(paths)), workers=workers, progress=False)
                seconds = time.perf_counter() - start
            results[f"ray-{workers}"] = {
                "seconds": round(seconds, 1),
                "photos_per_s": round(report.added / seconds, 2),
                "embedding_seconds": round(run.seconds, 1),
                "embedding_photos_per_s": round(run.photos / run.seconds, 2),
            }
            print(f"ray-{workers}", results[f"ray-{workers}"], flush=True)
        results["load_after"] = os.getloadavg()
    ray.shutdown()
    single = vectors(settings_for(args.work, "single"))
    for workers in (1, 2):
        other = vectors(settings_for(args.work, f"ray-{workers}"))
        same_ids = sorted(single) == sorted(other) and all(single[p][0] == other[p][0] for p in single)
        cosines = [float(single[p][1] @ other[p][1]) for p in single]
        results[f"ray-{workers}"] |= {"same_ids": same_ids, "min_cosine": round(min(cosines), 6)}
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
