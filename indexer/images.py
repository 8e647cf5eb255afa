"""Turn whatever a user hands us (a path, bytes) into a clean RGB PIL image, or a clear error.

Handles EXIF orientation, grayscale/palette/CMYK/alpha, tiny images and decompression bombs.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"})
DEFAULT_MAX_PIXELS = 64_000_000
MIN_SIDE = 8


class ImageDecodeError(ValueError):
    """The input is not an image we can use; the message says why in words a user can act on."""


def content_hash(data: bytes) -> str:
    """Identity of an image file: sha256 of its bytes (the key of the features cache)."""
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def decode_image(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    """Decode image bytes to an upright RGB image.

    Raises :class:`ImageDecodeError` for empty, non-image, truncated, tiny or over-large input.
    """
    if not data:
        raise ImageDecodeError("empty file: no image data was received")
    try:
        with warnings.catch_warnings():
            # Pillow warns (not raises) between max_pixels and 2x; we want a hard, explicit limit.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
            if width * height > max_pixels:
                raise ImageDecodeError(
                    f"image too large: {width}x{height} = {width * height:,} pixels "
                    f"exceeds the limit of {max_pixels:,} pixels (resize it first)"
                )
            image.load()
    except ImageDecodeError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageDecodeError(f"image too large (decompression bomb protection): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageDecodeError("not an image: the data is not in any format Pillow can read") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageDecodeError(f"corrupt or truncated image: {exc}") from exc
    if min(image.size) < 1:
        raise ImageDecodeError("image has no pixels")
    return to_rgb(image)


def to_rgb(image: Image.Image) -> Image.Image:
    """Apply EXIF orientation and flatten any mode (L, P, CMYK, RGBA, I;16 …) to RGB on white."""
    image = ImageOps.exif_transpose(image) or image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba)
    if image.mode == "I;16" or image.mode == "I":
        # 16/32-bit grayscale: scale to 8 bits instead of clipping everything to white.
        image = image.point(lambda value: value * (1 / 256)).convert("L")
    if image.mode != "RGB":
        image = image.convert("RGB")
    if min(image.size) < MIN_SIDE:
        # Tiny images (icons, 1x1 pixels) still get a vector: upsample so the CNN sees something.
        scale = MIN_SIDE / min(image.size)
        image = image.resize((max(MIN_SIDE, round(image.width * scale)), max(MIN_SIDE, round(image.height * scale))))
    return image


def load_image(path: Path, max_pixels: int = DEFAULT_MAX_PIXELS) -> Image.Image:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImageDecodeError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return decode_image(data, max_pixels=max_pixels)


def is_image_path(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES
