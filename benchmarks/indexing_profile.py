"""CPU-seconds per photo of each indexing stage, for 12-Mpx phone JPEGs (issue 27's 60 photos/s target).

Wall-clock photos/s on a shared 2-core machine follow the other jobs; CPU time does not. Each stage runs alone,
in this thread, on the same photos, and is timed with ``time.thread_time`` (the ONNX model with
``time.process_time``: its intra-op threads are other threads of this process). The sum is what one photo
costs the machine; ``2 / sum`` is the photos/s two idle cores could reach.

    .venv/bin/python benchmarks/indexing_profile.py --sample 60 --upscale 4000x3000 --out benchmarks/indexing-profile.md

Stages, in the order ``ImageIndex.add_paths`` meets them:

* read: the file's bytes (``read_bounded``); hash: sha256 of them (``content_hash``);
* exif: ``photo_facts`` (capture time, GPS, camera); header: the upright size from the header (``header_size``);
* decode: ``decode_image`` reduced to the encoder's side (``Image.draft`` + normalising);
* prepare: the encoder's resize / centre crop / normalise; thumbnail: the 256-px JPEG from the same decode;
* model: EfficientNet-Lite2 through ONNX Runtime at each ``--batches`` size and ``--threads`` count (CPU
  seconds of the whole process per photo, and the wall time);
* vectors: image-space transform + FAISS add; rows: one SQLite transaction inserting the rows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder
from indexer.image_sources import expand_sources
from indexer.image_space import ImageSpace
from indexer.images import content_hash, decode_image
from indexer.photo_metadata import photo_facts
from indexer.settings import Settings
from indexer.store.ingest import fact_columns, header_size, read_bounded
from indexer.store.metadata import MetadataStore, NewImage, sqlite_url
from indexer.store.vector_files import new_vectors
from indexer.thumbnails import thumbnail_bytes

DEFAULT_IMAGES = Path(__file__).resolve().parents[2] / "shared" / "data" / "m30k-f8k" / "images"


def upscaled(photos: list[Path], size: str, folder: Path, quality: int = 90, grain: float = 0.0) -> list[Path]:
    """The photos re-encoded at ``size`` (bicubic, JPEG ``quality``, with an EXIF date and GPS position like a
    phone's). ``grain``: the standard deviation of Gaussian noise added per pixel first, so that the entropy coder
    sees detail as in a real photo (an upscaled 500-px photo is smooth: ~780 KB at q90, where a 12-Mpx phone JPEG
    is 2–4 MB); seeded, so the same files every run."""
    width, height = (int(part) for part in size.lower().split("x"))
    rng = np.random.default_rng(0)
    out = []
    for number, path in enumerate(photos):
        target = folder / f"{number:05d}_{path.stem}.jpg"
        exif = Image.Exif()
        exif[0x010F], exif[0x0110] = "Phone", "Model 12"
        exif.get_ifd(0x8769)[0x9003] = "2024:07:14 18:03:22"
        exif.get_ifd(0x8825).update({1: "N", 2: (38.0, 43.0, 20.3), 3: "W", 4: (9.0, 8.0, 21.5)})
        with Image.open(path) as image:
            big = image.convert("RGB").resize((width, height), Image.Resampling.BICUBIC)
        if grain:
            noisy = np.asarray(big, dtype=np.float32) + rng.normal(0.0, grain, (height, width, 3)).astype(np.float32)
            big = Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8))
        big.save(target, quality=quality, exif=exif)
        out.append(target)
    return out


def per_photo(stage: Callable[[int], Any], count: int, clock: Callable[[], float] = time.thread_time) -> float:
    """CPU seconds per call of ``stage(i)`` for i in range(count) (the median of three passes)."""
    passes = []
    for _ in range(3):
        start = clock()
        for i in range(count):
            stage(i)
        passes.append((clock() - start) / count)
    return float(np.median(passes))


def profile(photos: list[Path], batches: list[int], threads: list[int], side: int, precision: str) -> dict[str, Any]:
    count = len(photos)
    datas = [read_bounded(path, None) for path in photos]
    images = [decode_image(data, min_side=side) for data in datas]
    encoder = EfficientNetLiteOnnxEncoder("efficientnet-lite2", Settings().resolved_models_dir)
    inputs = [encoder.prepare(image) for image in images]
    stages: dict[str, float] = {
        "read": per_photo(lambda i: read_bounded(photos[i], None), count),
        "hash": per_photo(lambda i: content_hash(datas[i]), count),
        "exif": per_photo(lambda i: photo_facts(datas[i]), count),
        "header": per_photo(lambda i: header_size(datas[i]), count),
        "decode": per_photo(lambda i: decode_image(datas[i], min_side=side), count),
        "prepare": per_photo(lambda i: encoder.prepare(images[i]), count),
        "thumbnail": per_photo(lambda i: thumbnail_bytes(images[i], 256), count),
    }
    scratch = Path(tempfile.mkdtemp(prefix="profile-rows-"))
    try:
        store = MetadataStore(sqlite_url(scratch / "metadata.sqlite"))
        rows = [
            NewImage(
                path=str(p),
                sha256=content_hash(d) + str(n),
                width=4000,
                height=3000,
                bytes=len(d),
                **fact_columns(p, photo_facts(d)),
            )
            for n, (p, d) in enumerate(zip(photos, datas, strict=True))
        ]
        start = time.thread_time()
        store.insert(rows)
        stages["rows"] = (time.thread_time() - start) / count
        store.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    features = np.random.default_rng(0).standard_normal((count, 1280)).astype(np.float32)
    space = ImageSpace("l2")

    def add_vectors(folder: Path) -> None:
        vectors = new_vectors(folder, 1280, _flat())
        vectors.add(list(range(count)), space.apply(features))

    vector_folder = Path(tempfile.mkdtemp(prefix="profile-vectors-"))
    try:
        start = time.thread_time()
        for _ in range(3):
            add_vectors(vector_folder)
        stages["vectors"] = (time.thread_time() - start) / 3 / count
    finally:
        shutil.rmtree(vector_folder, ignore_errors=True)

    model: list[dict[str, Any]] = []
    for thread_count in threads:
        encoder = EfficientNetLiteOnnxEncoder(
            "efficientnet-lite2", Settings().resolved_models_dir, threads=thread_count, precision=precision
        )
        encoder.load()
        for batch in batches:
            chunks = [inputs[i : i + batch] for i in range(0, count, batch)]
            encoder.predict_prepared(chunks[0])  # warm-up (kernels for this shape)
            cpu, wall = time.process_time(), time.perf_counter()
            for chunk in chunks:
                encoder.predict_prepared(chunk)
            model.append(
                {
                    "threads": thread_count,
                    "batch": batch,
                    "cpu_s_per_photo": (time.process_time() - cpu) / count,
                    "wall_s_per_photo": (time.perf_counter() - wall) / count,
                }
            )
            print(json.dumps(model[-1]), flush=True)
    return {
        "stages": stages,
        "model": model,
        "precision": precision,
        "decoded_size": list(images[0].size),
        "mean_file_bytes": float(np.mean([len(data) for data in datas])),
        "photos": count,
    }


def _flat() -> Any:
    from indexer.store.index_kinds import VectorIndexSettings

    return VectorIndexSettings()


def markdown(result: dict[str, Any], command: str, load: tuple[float, float]) -> str:
    stages = result["stages"]
    best = min(result["model"], key=lambda m: m["cpu_s_per_photo"])
    total = sum(stages.values()) + best["cpu_s_per_photo"]
    lines = [
        "# CPU cost of indexing one 12-Mpx photo, per stage",
        "",
        f"Command: `{command}`  ",
        f"{result['photos']} photos of {result['mean_file_bytes'] / 1e6:.2f} MB on average, decoded to "
        f"{result['decoded_size'][0]}×{result['decoded_size'][1]}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average (1 min) {load[0]:.1f} at the start, "
        f"{load[1]:.1f} at the end, {os.cpu_count()} CPUs. CPU seconds do not depend on the load (much): other "
        "jobs take turns on the cores but do not add to this process's CPU time.",
        "",
        "| stage | CPU ms per photo |",
        "| --- | ---: |",
    ]
    lines += [f"| {name} | {seconds * 1000:.2f} |" for name, seconds in stages.items()]
    lines += [
        f"| model, {result['precision']} (best: batch {best['batch']}, {best['threads']} thread(s)) | {best['cpu_s_per_photo'] * 1000:.2f} |",
        f"| **total** | **{total * 1000:.2f}** |",
        "",
        f"Capacity of two idle cores at this cost: {2 / total:.0f} photos/s.",
        "",
        "The model by batch size and ONNX Runtime intra-op threads:",
        "",
        "| threads | batch | CPU ms per photo | wall ms per photo |",
        "| ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {m['threads']} | {m['batch']} | {m['cpu_s_per_photo'] * 1000:.2f} | {m['wall_s_per_photo'] * 1000:.2f} |"
        for m in result["model"]
    ]
    lines += ["", "```json", json.dumps(result, indent=2), "```", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES)
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--upscale", default="4000x3000")
    parser.add_argument("--quality", type=int, default=90, help="JPEG quality of the upscaled photos.")
    parser.add_argument(
        "--grain",
        type=float,
        default=0.0,
        help="Noise (std. dev., grey levels) added before encoding: phone-like sizes.",
    )
    parser.add_argument("--side", type=int, default=260, help="Short side decoded to (the indexer's decode side).")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--precision",
        choices=["int8", "fp32"],
        default="int8",
        help="The network's graph (the indexer's default: int8).",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    photos = expand_sources([args.images]).paths
    sample = [photos[i] for i in np.random.default_rng(0).choice(len(photos), args.sample, replace=False)]
    scratch = Path(tempfile.mkdtemp(prefix="profile-photos-"))
    try:
        photos = upscaled(sample, args.upscale, scratch, args.quality, args.grain)
        result = profile(photos, args.batches, args.threads, args.side, args.precision)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    command = ".venv/bin/python benchmarks/indexing_profile.py " + " ".join(sys.argv[1:])
    text = markdown(result, command.strip(), (load_start, os.getloadavg()[0]))
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
