"""Activation ranges of the int8 image CNN, measured on training photos (``polyglot models calibrate``).

ONNX Runtime's MinMax calibration over ``images`` photos of a split (the first ones of ``splits/<split>.txt``, a
fixed set), preprocessed exactly as the indexer does. Training photos only: the dev sets (Flickr dev, the wide
ImageNet samples) measure what the int8 graph costs, so they must not shape it. 128 photos: MinMax ranges
widen with every outlier photo (more photos coarsen the int8 steps), and percentile calibration over all
activations of 128 photos does not fit in 24 GB.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from PIL import Image
from tqdm.auto import tqdm

from indexer.asset_paths import IMAGE_INT8_RANGES
from indexer.atomic import atomic_write_bytes
from indexer.encoders.preprocess import efficientnet_lite_pixels
from indexer.export.efficientnet import FEATURES_FILE, export_efficientnet_lite
from indexer.export.efficientnet_int8 import quantize_features


class CalibrationError(ValueError):
    """The data folder or split cannot give calibration photos."""


def calibration_photos(data: Path, split: str, images: int) -> list[Path]:
    listing = Path(data) / "splits" / f"{split}.txt"
    if not listing.is_file():
        raise CalibrationError(f"{listing} is missing: --data must be a data set folder with splits/{split}.txt")
    photos = [Path(data) / "images" / name for name in listing.read_text(encoding="utf-8").split()[:images]]
    missing = [str(path) for path in photos if not path.is_file()]
    if missing:
        raise CalibrationError(f"{len(missing)} photos of {listing} are missing, e.g. {missing[0]}")
    if len(photos) < images:
        raise CalibrationError(f"{listing} lists {len(photos)} photos, fewer than --images {images}")
    return photos


class _PhotoBatches:
    """ORT's CalibrationDataReader protocol: one preprocessed photo per call, then None."""

    def __init__(self, photos: list[Path], size: int, progress: bool) -> None:
        self._photos = iter(tqdm(photos, desc="calibrating", unit="img", disable=not progress))
        self._size = size

    def get_next(self) -> dict[str, Any] | None:
        path = next(self._photos, None)
        if path is None:
            return None
        with Image.open(path) as image:
            pixels = efficientnet_lite_pixels(image.convert("RGB"), self._size)
        return {"pixels": pixels[None]}


def calibrate_image_ranges(
    data: Path,
    *,
    split: str = "train",
    images: int = 128,
    name: str = "efficientnet-lite2",
    out: Path | None = None,
    progress: bool = True,
) -> Path:
    """Measure the ranges and write them to ``out`` (default: the shipped asset ``IMAGE_INT8_RANGES[name]``)."""
    if name not in IMAGE_INT8_RANGES:
        raise CalibrationError(f"no int8 graph for {name!r}; calibrate one of: {', '.join(IMAGE_INT8_RANGES)}")
    photos = calibration_photos(data, split, images)
    target = Path(out or IMAGE_INT8_RANGES[name])
    with tempfile.TemporaryDirectory(prefix="calibrate-") as scratch:
        folder = Path(scratch)
        size = export_efficientnet_lite(name, folder)["input_size"]  # the network's own, as the encoder uses it
        ranges = folder / "ranges.json"
        quantize_features(folder / FEATURES_FILE, folder / "int8.onnx", ranges, _PhotoBatches(photos, size, progress))
        atomic_write_bytes(target, ranges.read_bytes())
    return target
