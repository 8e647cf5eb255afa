"""Indexing benchmark: images/s (decode included) vs model-only throughput, index size, open time.

Run from the repository root (results go to benchmarks/indexing.md)::

    .venv/bin/python benchmarks/indexing.py --sample 300
    # issue 27: phone-sized photos (dev photos upscaled to 4000×3000, JPEG q90), reduced against full decoding
    .venv/bin/python benchmarks/indexing.py --sample 120 --upscale 4000x3000 --encoders efficientnet-lite2 \
        --backends onnx --decodes reduced full --skip-open --out benchmarks/indexing-12mpx.md

* indexing: ``ImageIndex.add_paths`` on ``--sample`` photos into a fresh index with a fresh (empty) features
  cache: read + sha256 + decode + preprocess + CNN + SQL + FAISS, i.e. what ``polyglot index add`` does; photos/s
  and the CPU seconds of the whole process per photo (load-independent: ``2 / cpu_s`` is what two idle cores
  reach), with the load average before and after;
* decode+preprocess only: ``decode_image`` + the encoder's resize/crop/normalise on the same photos;
* model only: the CNN on random tensors of the same batch size;
* size: FAISS file and SQLite file per image;
* open: ``ImageIndex.open`` of an index of all photos (built first, reusing ``--open-cache-dir`` features).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from indexer.image_index import ImageIndex
from indexer.image_sources import expand_sources
from indexer.image_space import ImageSpace
from indexer.images import decode_image
from indexer.settings import Settings

DEFAULT_IMAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "m30k-f8k" / "images"


def settings_for(
    root: Path,
    encoder: str,
    batch_size: int,
    cache_dir: Path | None = None,
    backend: str = "auto",
    decode: str = "reduced",
    workers: int | None = None,
    precision: str = "int8",
) -> Settings:
    return Settings(
        decode_full_size=decode == "full",
        home=root,
        index_dir=root / "index",
        cache_dir=cache_dir or root / "cache",
        models_dir=Settings().resolved_models_dir,  # the built ONNX exports (POLYGLOT_MODELS_DIR)
        image_encoder=encoder,
        encoder_backend=backend,  # type: ignore[arg-type]
        batch_size=batch_size,
        image_precision=precision,  # type: ignore[arg-type]
        **({"indexing_workers": workers} if workers else {}),
    )


def bench_encoder(
    name: str,
    photos: list[Path],
    batch_size: int,
    backend: str,
    decode: str,
    workers: int | None = None,
    precision: str = "int8",
) -> dict[str, Any]:
    result: dict[str, Any] = {"encoder": name, "images": len(photos), "batch_size": batch_size, "decode": decode}
    root = Path(tempfile.mkdtemp(prefix="bench-index-"))
    try:
        settings = settings_for(
            root, name, batch_size, backend=backend, decode=decode, workers=workers, precision=precision
        )
        index = ImageIndex.open(settings, image_space=ImageSpace("l2"))
        encoder: Any = index.encoder
        result["backend"] = getattr(encoder, "backend", "torch")
        result["precision"] = getattr(encoder, "precision", "fp32")  # what ran: int8 falls back where it cannot
        encoder.load()  # model loading is a one-off cost, not throughput
        warm = [encoder.prepare(decode_image(photos[0].read_bytes()))]
        encoder.predict_prepared(warm)  # warm-up (oneDNN kernels)
        if getattr(encoder, "per_call_threads", False):
            encoder.predict_prepared(warm, threads=1)  # the indexing workers' one-thread session: opened once
        load_before = os.getloadavg()[0]
        start, cpu = time.perf_counter(), time.process_time()
        report = index.add_paths(photos, progress=False)
        elapsed = time.perf_counter() - start
        assert report.added == len(photos), report
        result["index_images_per_s"] = len(photos) / elapsed
        # CPU seconds of the whole process (every thread) per photo: what a photo costs, whatever else runs
        # on the machine; 2 / this is what two idle cores could index.
        result["index_cpu_s_per_image"] = (time.process_time() - cpu) / len(photos)
        result["index_workers"] = index._ingest.workers()
        result["load_average_1min"] = [load_before, os.getloadavg()[0]]
        faiss_bytes = (root / "index" / "vectors.faiss").stat().st_size
        sqlite_bytes = sum(p.stat().st_size for p in (root / "index").glob("metadata.sqlite*"))
        result["faiss_bytes_per_image"] = faiss_bytes / len(photos)
        result["sqlite_bytes_per_image"] = sqlite_bytes / len(photos)
        result["memory_bytes_per_image"] = index.stats()["memory_bytes_per_image"]
        index.close()

        side = None if decode == "full" else index._ingest.decode_side()
        start, cpu = time.perf_counter(), time.process_time()
        for path in photos:
            encoder.prepare(decode_image(path.read_bytes(), min_side=side))
        result["decode_preprocess_images_per_s"] = len(photos) / (time.perf_counter() - start)
        result["decode_preprocess_cpu_s_per_image"] = (time.process_time() - cpu) / len(photos)

        # The ceiling: the network alone on ready pixels, same batch size, same session and threads.
        size = encoder.input_size
        batch = list(np.random.default_rng(0).standard_normal((batch_size, 3, size, size), dtype=np.float32))
        batches = max(1, len(photos) // batch_size)
        # The threads an indexing worker gives a call: one each when several workers share the cores.
        threads = 1 if result["index_workers"] > 1 and getattr(encoder, "per_call_threads", False) else None
        result["model_threads"] = threads or "session default"
        encoder.predict_prepared(batch, threads=threads)  # warm-up
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(batches):
            encoder.predict_prepared(batch, threads=threads)
        result["model_images_per_s"] = batches * batch_size / (time.perf_counter() - start)
        result["model_cpu_s_per_image"] = (time.process_time() - cpu) / (batches * batch_size)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result


def upscaled(photos: list[Path], size: str, folder: Path) -> list[Path]:
    """The photos re-encoded at ``size`` (bicubic, JPEG q90): stand-ins for phone photos of that size."""
    from PIL import Image

    width, height = (int(part) for part in size.lower().split("x"))
    out = []
    for number, path in enumerate(photos):
        target = folder / f"{number:05d}_{path.stem}.jpg"
        with Image.open(path) as image:
            image.convert("RGB").resize((width, height), Image.Resampling.BICUBIC).save(target, quality=90)
        out.append(target)
    return out


def bench_open(name: str, photos: list[Path], batch_size: int, cache_dir: Path, repeats: int = 5) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-open-"))
    try:
        settings = settings_for(root, name, batch_size, cache_dir)
        start = time.perf_counter()
        with ImageIndex.open(settings, image_space=ImageSpace("l2")) as index:
            report = index.add_paths(photos, progress=False)
        build_s = time.perf_counter() - start
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            with ImageIndex.open(settings, image_space=ImageSpace("l2")) as index:
                times.append(time.perf_counter() - start)
                count = len(index)
                query = index.vector(1)
                start = time.perf_counter()
                index.search(query, k=10)  # type: ignore[arg-type]
                search_ms = (time.perf_counter() - start) * 1000
        return {
            "encoder": name,
            "count": count,
            "build_from_cache_s": build_s,
            "build_added": report.added,
            "open_s_median": statistics.median(times),
            "open_s_all": times,
            "search_ms": search_ms,
            "faiss_file_bytes": (root / "index" / "vectors.faiss").stat().st_size,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_cli(name: str, photos: list[Path], backend: str, decode: str, precision: str) -> dict[str, float]:
    """``polyglot index add PHOTOS`` in a new process into a fresh index and features cache: what a user waits
    for, the interpreter's and the command's start-up and the model's loading included."""
    root = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    env = {key: value for key, value in os.environ.items() if not key.startswith("POLYGLOT_")}
    env.update(
        POLYGLOT_HOME=str(root),
        POLYGLOT_MODELS_DIR=str(Settings().resolved_models_dir),
        POLYGLOT_IMAGE_ENCODER=name,
        POLYGLOT_ENCODER_BACKEND=backend,
        POLYGLOT_IMAGE_PRECISION=precision,
        POLYGLOT_DECODE_FULL_SIZE="1" if decode == "full" else "0",
    )
    polyglot = Path(sys.executable).with_name("polyglot")
    try:
        start = time.perf_counter()
        done = subprocess.run(
            [str(polyglot), "index", "add", *map(str, photos)], env=env, capture_output=True, text=True, check=False
        )
        elapsed = time.perf_counter() - start
        if done.returncode != 0 or f"added {len(photos)}," not in done.stdout + done.stderr:
            raise RuntimeError(f"polyglot index add failed: {done.stdout[-500:]} {done.stderr[-2000:]}")
        start = time.perf_counter()
        subprocess.run([str(polyglot), "index", "stats"], env=env, capture_output=True, check=True)
        stats_seconds = time.perf_counter() - start
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"cli_seconds": elapsed, "cli_images_per_s": len(photos) / elapsed, "cli_stats_seconds": stats_seconds}


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1000:.1f}" if seconds else "–"


def markdown(results: list[dict[str, Any]], opened: dict[str, Any] | None, command: str, load_start: float) -> str:
    import onnxruntime

    lines = [
        "# Indexing benchmark",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}, "
        f"onnxruntime {onnxruntime.__version__}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"(1 min) {load_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end on {os.cpu_count()} CPUs. When the load exceeds the CPU count, other jobs shared "
        "the cores during the run: absolute numbers are then pessimistic and the ratios more telling.",
        "",
        "| encoder | backend | precision | decode | images | batch | workers | indexing img/s (decode incl.) "
        "| indexing CPU ms/img "
        "| 2 / CPU s: img/s two idle cores reach | load avg during | decode+preprocess img/s (CPU ms/img) "
        "| model-only img/s (CPU ms/img) | FAISS bytes/img | SQLite bytes/img | memory bytes/img "
        "| `polyglot index add` img/s, start-up incl. (s) | `polyglot index stats` s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        cpu = r.get("index_cpu_s_per_image")
        load = r.get("load_average_1min")
        lines.append(
            f"| {r['encoder']} | {r['backend']} | {r.get('precision', 'fp32')} | {r.get('decode', 'full')} "
            f"| {r['images']} | {r['batch_size']} "
            f"| {r.get('index_workers', 1)} | {r['index_images_per_s']:.1f} "
            f"| {_ms(cpu)} | {f'{2 / cpu:.0f}' if cpu else '–'} "
            f"| {f'{load[0]:.1f}–{load[1]:.1f}' if load else '–'} "
            f"| {r['decode_preprocess_images_per_s']:.1f} ({_ms(r.get('decode_preprocess_cpu_s_per_image'))}) "
            f"| {r['model_images_per_s']:.1f} ({_ms(r.get('model_cpu_s_per_image'))}) "
            f"| {r['faiss_bytes_per_image']:.0f} | {r['sqlite_bytes_per_image']:.0f} | {r['memory_bytes_per_image']:.0f} "
            + (
                f"| {r['cli_images_per_s']:.1f} ({r['cli_seconds']:.1f}) | {r['cli_stats_seconds']:.2f} |"
                if "cli_seconds" in r
                else "| – | – |"
            )
        )
    if opened:
        lines += [
            "",
            f"Open time of an index of {opened['count']:,} images ({opened['encoder']}, flat, "
            f"{opened['faiss_file_bytes'] / 1e6:.1f} MB FAISS file): median {opened['open_s_median'] * 1000:.0f} ms "
            f"over {len(opened['open_s_all'])} opens (`ImageIndex.open`, reconcile included); one exact top-10 search "
            f"{opened['search_ms']:.1f} ms. Building it from the cached features took "
            f"{opened['build_from_cache_s']:.1f} s (hashing and header reads of every file).",
        ]
    lines += ["", "Raw results:", "", "```json", json.dumps({"encoders": results, "open": opened}, indent=2), "```", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES)
    parser.add_argument("--sample", type=int, default=300, help="Photos for the throughput runs.")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--encoders", nargs="+", default=["efficientnet-lite0", "efficientnet-lite2"])
    parser.add_argument(
        "--backends", nargs="+", default=["onnx", "torch"], help="POLYGLOT_ENCODER_BACKEND values to compare."
    )
    parser.add_argument(
        "--precisions",
        nargs="+",
        default=["int8"],
        choices=["int8", "fp32"],
        help="POLYGLOT_IMAGE_PRECISION values to compare (int8: the default since issue 27, CPU ONNX only).",
    )
    parser.add_argument("--open-encoder", default="efficientnet-lite2")
    parser.add_argument("--open-cache-dir", type=Path, default=Path("var/cache"), help="Features cache to reuse.")
    parser.add_argument("--skip-open", action="store_true")
    parser.add_argument(
        "--decodes",
        nargs="+",
        default=["reduced"],
        choices=["reduced", "full"],
        help="Decode at the encoder's size (default since issue 27) and/or at full size (POLYGLOT_DECODE_FULL_SIZE).",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="POLYGLOT_INDEXING_WORKERS (default: one per core for the ONNX encoder, else one).",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="Runs of each configuration, interleaved (a shared machine: compare the best).",
    )
    parser.add_argument(
        "--upscale",
        default=None,
        help="WxH: re-encode the sampled photos at this size (JPEG q90) first, e.g. 4000x3000 for 12-Mpx phone photos.",
    )
    parser.add_argument(
        "--cli",
        action="store_true",
        help="Also time `polyglot index add` of the same photos in a new process (start-up included) after each run.",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("indexing.md"))
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    photos = expand_sources([args.images]).paths
    sample = [photos[i] for i in np.random.default_rng(0).choice(len(photos), args.sample, replace=False)]
    scratch = Path(tempfile.mkdtemp(prefix="bench-photos-"))
    if args.upscale:
        sample = upscaled(sample, args.upscale, scratch)
    results = []
    try:
        for name in args.encoders:
            for backend in args.backends:
                runs = [(d, p) for _ in range(args.repeats) for d in args.decodes for p in args.precisions]
                for decode, precision in runs:
                    print(f"benchmarking {name} ({backend}, {precision}, {decode} decode) on {len(sample)} photos …")
                    results.append(
                        bench_encoder(name, sample, args.batch_size, backend, decode, args.workers, precision)
                    )
                    if args.cli:
                        results[-1].update(bench_cli(name, sample, backend, decode, precision))
                    print(json.dumps(results[-1]), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    opened = None
    if not args.skip_open:
        print(f"building and opening an index of {len(photos)} photos …", flush=True)
        opened = bench_open(args.open_encoder, photos, args.batch_size, args.open_cache_dir.resolve())
        print(json.dumps(opened), flush=True)
    command = ".venv/bin/python benchmarks/indexing.py " + " ".join(sys.argv[1:])
    args.out.write_text(markdown(results, opened, command.strip(), load_start), encoding="utf-8")
    raw = {"command": command.strip(), "load_average_1min_start": load_start, "encoders": results, "open": opened}
    args.out.with_suffix(".json").write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
