"""SMALR towers at query time: parameter counts next to the shipped towers, single-query latency, and the cost
of the image-branch choice (docs/results.md, "Issue 15: SMALR").

    POLYGLOT_MODELS_DIR=/path/to/var/models python benchmarks/smalr_query.py var/towers/la var/towers/hem \
        var/towers/smalr --data ../shared/data/m30k-f8k --json docs/results/r15/query.json

Latency: one query at a time (the service embeds a request's query alone), the dev captions of each language in
turn, through ``load_text_tower`` (the served loading path) and ``embed(texts, langs)``; the machine's load
average is recorded with the numbers. Image branch: the query-time map ``Pᵀ`` (what ships) against the two
alternatives it avoids, an image branch applied to every indexed photo per query, or a second vector per photo.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from indexer.caption_records import read_captions
from indexer.query.models import load_text_tower
from indexer.settings import Settings
from indexer.tower import CONFIG_NAME, WEIGHTS_NAME
from training.asset_paths import research_tower_path
from training.data.dataset import read_split

LANGS = ("en", "de", "fr", "cs")


def onnx_parameters(path: Path) -> int:
    import onnx

    model = onnx.load(str(path))
    return int(sum(int(np.prod(init.dims)) for init in model.graph.initializer))


def shipped_counts(models_dir: Path) -> dict[str, dict[str, int]]:
    """The shipped towers' trained MLPs and their frozen sentence encoders (ONNX initializers)."""
    muse = onnx_parameters(models_dir / "muse-v3" / "embedding_model_quantized.onnx")
    e5 = onnx_parameters(models_dir / "e5-small-onnx" / "e5-small.onnx")
    counts = {}
    for name, folder, frozen in (
        ("shipped tower (muse+e5-small, InfoNCE)", research_tower_path("tower"), muse + e5),
        ("shipped fast tower (muse)", research_tower_path("tower-muse"), muse),
    ):
        trained = int(sum(array.size for array in load_file(str(Path(folder) / WEIGHTS_NAME)).values()))
        counts[name] = {"training": trained, "query_time": trained + frozen, "frozen_encoder": frozen}
    return counts


def latency(folder: Path, queries: dict[str, list[str]], repeat: int) -> dict[str, float]:
    settings = Settings()
    embedder = load_text_tower(settings, folder)
    times = []
    for lang, texts in queries.items():
        for text in texts[:repeat]:
            start = time.perf_counter()
            embedder.embed([text], [lang])
            times.append(time.perf_counter() - start)
    ms = np.array(times) * 1000
    return {"p50_ms": float(np.percentile(ms, 50)), "p90_ms": float(np.percentile(ms, 90)), "queries": len(ms)}


def image_branch_costs(folder: Path, n_photos: int, repeat: int = 50) -> dict[str, float]:
    """ms per query of ``Pᵀ t`` (shipped) vs a linear image branch over every photo per query, and the memory
    a second stored vector per photo would take."""
    config = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8"))
    joint, image_dim = int(config["joint_dim"]), int(config["output_dim"])
    rng = np.random.default_rng(0)
    projection = rng.standard_normal((joint, image_dim)).astype(np.float32)
    photos = rng.standard_normal((n_photos, image_dim)).astype(np.float32)
    query = rng.standard_normal((1, joint)).astype(np.float32)

    def timed(fn: object) -> float:
        start = time.perf_counter()
        for _ in range(repeat):
            fn()  # type: ignore[operator]
        return (time.perf_counter() - start) / repeat * 1000

    return {
        "photos": n_photos,
        "query_map_ms": timed(lambda: query @ projection),
        "branch_over_all_photos_ms": timed(lambda: photos @ projection.T),
        "second_vector_mb": n_photos * joint * 4 / 2**20,
        "index_vectors_mb": n_photos * image_dim * 4 / 2**20,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("towers", nargs="+", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=200, help="queries per language")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    dev = set(read_split(args.data, "dev"))
    queries: dict[str, list[str]] = {lang: [] for lang in LANGS}
    for caption in read_captions(args.data / "captions.jsonl", LANGS):
        if caption.image in dev and len(queries[caption.lang]) < args.repeat:
            queries[caption.lang].append(caption.text)
    report: dict[str, object] = {"load_average": os.getloadavg(), "towers": {}}
    settings = Settings()
    report["shipped"] = shipped_counts(settings.resolved_models_dir)
    for folder in args.towers:
        training = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8")).get("training", {})
        report["towers"][folder.name] = {  # type: ignore[index]
            "parameters": training.get("parameters"),  # SMALR towers; the shipped ones are counted above
            "latency": latency(folder, queries, args.repeat),
        }
    smalr = [folder for folder in args.towers if "joint_dim" in json.loads((folder / CONFIG_NAME).read_text())]
    if smalr:
        report["image_branch"] = image_branch_costs(smalr[0], 6993)
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
