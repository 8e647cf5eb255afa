"""Near-duplicate threshold on dev photos (issue 27): precision and recall of ``cosine >= t`` per threshold.

Positives: each sampled dev photo against its own copies — JPEG re-encoded at quality 50, halved (bicubic),
the centre 80 % crop, and all three together ("edited"). Negatives: each photo against its nearest *other* dev
photo of the whole split (1,000 photos: the hardest distinct pair it has). Vectors: the index's image space
(efficientnet-lite2, ONNX, unit vectors, what `find_duplicates` compares). Run from the repository root::

    .venv/bin/python benchmarks/duplicates.py --sample 200 --out benchmarks/duplicates.md
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

from indexer.encoders import build_image_encoder
from indexer.images import decode_image
from indexer.settings import Settings
from indexer.store.opening import default_image_space

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "m30k-f8k"


def variants(data: bytes) -> dict[str, bytes]:
    image = decode_image(data)
    out = {}

    def save(picture: Image.Image, quality: int = 90) -> bytes:
        buffer = io.BytesIO()
        picture.save(buffer, "JPEG", quality=quality)
        return buffer.getvalue()

    w, h = image.size
    crop = image.crop((w // 10, h // 10, w - w // 10, h - h // 10))
    out["re-encoded q50"] = save(image, 50)
    out["halved"] = save(image.resize((w // 2, h // 2), Image.Resampling.BICUBIC))
    out["crop 80 %"] = save(crop)
    out["crop + halved + q50"] = save(crop.resize((crop.width // 2, crop.height // 2), Image.Resampling.BICUBIC), 50)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("duplicates.md"))
    args = parser.parse_args()
    settings = Settings()
    space = default_image_space(settings)
    encoder = build_image_encoder(settings)
    encoder.load()
    dev = [line.strip() for line in (DATA / "splits" / "dev.txt").read_text().split() if line.strip()]
    paths = [DATA / "images" / name if name.endswith(".jpg") else DATA / "images" / f"{name}.jpg" for name in dev]
    began = time.perf_counter()

    def embed(blobs: list[bytes]) -> np.ndarray:
        out = []
        for start in range(0, len(blobs), 32):
            images = [decode_image(b, min_side=encoder.decode_side) for b in blobs[start : start + 32]]
            out.append(space.apply(encoder.predict(images)))
        return np.concatenate(out)

    originals = [p.read_bytes() for p in paths]
    base = embed(originals)
    rng = np.random.default_rng(0)
    sample = rng.choice(len(paths), min(args.sample, len(paths)), replace=False)
    negatives = []
    for i in sample:
        scores = base @ base[i]
        scores[i] = -1
        negatives.append(float(scores.max()))
    positives: dict[str, list[float]] = {}
    for i in sample:
        copies = variants(originals[i])
        vectors = embed(list(copies.values()))
        for name, vector in zip(copies, vectors, strict=True):
            positives.setdefault(name, []).append(float(vector @ base[i]))
    everything = [s for values in positives.values() for s in values]
    lines = [
        "# Near-duplicate threshold (dev photos)",
        "",
        f"Command: `.venv/bin/python benchmarks/duplicates.py {' '.join(sys.argv[1:])}` ({time.perf_counter() - began:.0f} s, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        f"{len(sample)} dev photos (of {len(paths)}), each with 4 copies (positives: {len(everything)}) and its nearest "
        f"distinct dev photo (negatives: {len(negatives)}). Cosine in the index's image space (efficientnet-lite2).",
        "",
        "Cosine of a photo with its copy (min / 5th percentile / median), and of the nearest distinct photo:",
        "",
        "| pair | min | p5 | median |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, values in [*positives.items(), ("nearest distinct dev photo", negatives)]:
        lines.append(f"| {name} | {min(values):.3f} | {np.percentile(values, 5):.3f} | {np.median(values):.3f} |")
    lines += [
        "",
        "Per threshold: recall per kind of copy, overall recall, and precision (pairs at or above it that are copies; "
        "a distinct photo's nearest neighbour is the one pair per photo that could be a false match):",
        "",
        "| threshold | " + " | ".join(f"recall {n}" for n in positives) + " | recall | precision | false pairs |",
        "| ---: | " + " | ".join("---:" for _ in positives) + " | ---: | ---: | ---: |",
    ]
    table = {}
    for t in (0.80, 0.85, 0.88, 0.90, 0.92, 0.94, 0.96):
        tp = sum(s >= t for s in everything)
        fp = sum(s >= t for s in negatives)
        recall = tp / len(everything)
        precision = tp / (tp + fp) if tp + fp else 1.0
        per = [sum(s >= t for s in v) / len(v) for v in positives.values()]
        table[t] = {"recall": recall, "precision": precision, "false_pairs": fp}
        lines.append(
            f"| {t:.2f} | " + " | ".join(f"{r:.3f}" for r in per) + f" | {recall:.3f} | {precision:.3f} | {fp} |"
        )
    lines += [
        "",
        "```json",
        json.dumps(
            {
                "positives": {k: np.round(v, 4).tolist() for k, v in positives.items()},
                "negatives": np.round(negatives, 4).tolist(),
            }
        ),
        "```",
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[:40]))


if __name__ == "__main__":
    main()
