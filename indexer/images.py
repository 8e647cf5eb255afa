"""Turn whatever a user hands us (a path, bytes) into a clean RGB PIL image, or a clear error.

Handles EXIF orientation, grayscale/palette/CMYK/alpha/16- and 32-bit modes, animations, tiny images,
decompression bombs and absurd shapes. Every image the service or the indexer reads goes through
:func:`decode_image`, so the bound below holds everywhere (uploads, indexing, thumbnails, tagging).

What one image may cost (issue 12: a 277-byte 1×100,000 PNG once asked for 27 GB to resize):

* Refused from the header, before a pixel is decoded: more than ``max_pixels`` pixels
  (``POLYGLOT_MAX_IMAGE_PIXELS``, default 64 M), or a long side over ``MAX_ASPECT_RATIO`` (20) times the short
  side. The models see the centre square of an image: under 5% of such a strip, so its vector would not stand
  for it anyway.
* Decoding: the first frame only (animated GIF/WebP/PNG, multi-page TIFF), at most 4 bytes per pixel (Pillow's
  widest storage, for RGB, RGBA, CMYK, 32-bit int and float alike; 16-bit gray takes 2).
* Normalising (orientation, alpha, bit depth, RGB) goes step by step, each step dropping its input, so at most
  two full-size copies are alive: ``2 × 4 × max_pixels`` bytes, 512 MB at the default limit. Measured: an
  8000×8000 RGBA PNG (243 KB) 490 MB and 2.7 s, the same in grayscale 306 MB, a 12-Mpx RGB photo 50 MB. Lower
  POLYGLOT_MAX_IMAGE_PIXELS on a small machine: it is what bounds a request.
* Tiny images are upscaled to a short side of ``MIN_SIDE`` (8) px: at most 8 × 160 px, given the aspect ratio.
* The encoders resample only the centre square (:func:`indexer.encoders.torch_utils.resize_center_crop`): a
  few MB at model size, whatever the shape.

Decoding for the size the caller needs (issue 27): with ``min_side`` (the indexer passes the encoder's input
size), a JPEG is decoded by libjpeg's DCT scaling (Pillow's ``draft``: 1/2, 1/4 or 1/8 of the pixels, chosen
so the short side stays >= ``min_side``) and any other format is box-``reduce``d by an integer factor right
after decoding, before orientation and mode conversion; EXIF orientation is applied after the reduction. A
12-Mpx phone JPEG then costs ~6 ms and ~1 MB instead of 43 ms and 50 MB; the vectors stay within the cosine
bound of ``tests/collection/test_photo_library.py::test_reduced_decoding_keeps_the_vectors_of_full_decoding``.
The limits above are checked on the header's full size all the same.
HEIC/HEIF/AVIF open through pillow-heif, camera RAW through its embedded JPEG preview (:mod:`indexer.raw_preview`),
both under the same limits.
"""

from __future__ import annotations

import hashlib
import io
import math
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from indexer.raw_preview import raw_preview
from indexer.regular_files import read_regular_bytes

RAW_SUFFIXES = frozenset({".dng", ".cr2", ".nef", ".arw", ".orf", ".rw2", ".pef", ".srw", ".raf"})
HEIF_SUFFIXES = frozenset({".heic", ".heif", ".hif", ".avif"})
IMAGE_SUFFIXES = (
    frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"}) | HEIF_SUFFIXES | RAW_SUFFIXES
)
DEFAULT_MAX_PIXELS = 64_000_000
MAX_ASPECT_RATIO = 20
MIN_SIDE = 8
ORIENTATION = 0x0112


class ImageDecodeError(ValueError):
    """The input is not an image we can use; the message says why in words a user can act on."""


_registered = threading.Event()


def register_formats() -> None:
    """HEIC/HEIF and AVIF through pillow-heif (once per process; a no-op where it is not installed)."""
    if _registered.is_set():
        return
    try:
        import pillow_heif

        pillow_heif.register_heif_opener(thumbnails=False)
        if hasattr(pillow_heif, "register_avif_opener") and "AVIF" not in Image.registered_extensions().values():
            pillow_heif.register_avif_opener(thumbnails=False)
    except ImportError:  # pragma: no cover - a dependency; kept optional for minimal installs
        pass
    _registered.set()


def content_hash(data: bytes) -> str:
    """Identity of an image file: sha256 of its bytes (the key of the features cache)."""
    return hashlib.sha256(data).hexdigest()


def file_hash(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def check_size(width: int, height: int, max_pixels: int = DEFAULT_MAX_PIXELS) -> None:
    """Refuse, from the dimensions alone, what would cost too much to decode or make no sense to embed."""
    if width < 1 or height < 1:
        raise ImageDecodeError("image has no pixels")
    if width * height > max_pixels:
        raise ImageDecodeError(
            f"image too large: {width}x{height} = {width * height:,} pixels "
            f"exceeds the limit of {max_pixels:,} pixels (resize it first)"
        )
    check_shape(width, height)


def check_shape(width: int, height: int) -> None:
    if max(width, height) > MAX_ASPECT_RATIO * min(width, height):
        raise ImageDecodeError(
            f"image is {width}×{height}, an aspect ratio over {MAX_ASPECT_RATIO}:1: the models see the centre "
            f"square of an image, too little of this one to describe it (crop it to at most "
            f"{MAX_ASPECT_RATIO}:1 first)"
        )


def decode_image(data: bytes, max_pixels: int = DEFAULT_MAX_PIXELS, min_side: int | None = None) -> Image.Image:
    """Decode image bytes to an upright RGB image, within the bounds stated in the module docstring.

    ``min_side``: the caller needs no more than this short side (e.g. the encoder's input size); the image may
    then be decoded at a reduced size whose short side is still at least ``min_side`` (never upscaled). None:
    full size.

    Raises :class:`ImageDecodeError` for empty, non-image, truncated, over-large or absurdly thin input, and
    when the process runs out of memory decoding it (the message then says "too large").
    """
    if not data:
        raise ImageDecodeError("empty file: no image data was received")
    register_formats()
    size = "?"
    try:
        preview = raw_preview(data)  # camera RAW: its embedded JPEG stands for it
        raw_orientation = None
        if preview is not None:
            data, raw_orientation = preview
        with warnings.catch_warnings():
            # Pillow warns (not raises) between max_pixels and 2x; we want a hard, explicit limit.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image: Image.Image = Image.open(io.BytesIO(data))
            size = "x".join(map(str, image.size))
            check_size(*image.size, max_pixels)
            if min_side and image.format == "JPEG":
                _draft(image, min_side)
            image.load()  # the current frame: the first one of an animation or a multi-page TIFF
        if raw_orientation and not image.getexif().get(ORIENTATION):
            image.getexif()[ORIENTATION] = raw_orientation  # the RAW's tag, for _upright below
        if min_side:
            image = _reduced(image, min_side)  # before orientation and mode conversion: they work on fewer pixels
        for step in NORMALISE:
            image = step(image)  # rebinding drops the previous copy: two at most are alive
    except ImageDecodeError:
        raise
    except MemoryError:
        raise ImageDecodeError(
            f"image too large to decode with the memory this server has free ({size} pixels); resize it first"
        ) from None
    except Image.DecompressionBombError as exc:
        raise ImageDecodeError(f"image too large (decompression bomb protection): {exc}") from exc
    except UnidentifiedImageError as exc:
        raise ImageDecodeError("not an image: the data is not in any format Pillow can read") from exc
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageDecodeError(f"corrupt or truncated image: {exc}") from exc
    return image


def _draft(image: Image.Image, min_side: int) -> None:
    """Ask libjpeg for the smallest DCT scale (1/1 … 1/8) that keeps the short side >= ``min_side``."""
    width, height = image.size
    short = min(width, height)
    if short <= min_side:
        return
    scale = min_side / short
    image.draft(image.mode, (math.ceil(width * scale), math.ceil(height * scale)))


def _reduced(image: Image.Image, min_side: int) -> Image.Image:
    """Box-reduce by the largest integer factor that keeps the short side >= ``min_side`` (formats without
    DCT scaling; a drafted JPEG is already close and gets a factor of 1)."""
    factor = min(image.size) // min_side
    if factor < 2:
        return image
    try:
        return image.reduce(factor)
    except ValueError:  # a mode reduce does not take (1-bit, palette, …): normalised at full size instead
        return image


def _upright(image: Image.Image) -> Image.Image:
    # In place: without an orientation tag, exif_transpose would otherwise return a full copy.
    ImageOps.exif_transpose(image, in_place=True)
    return image


def _with_alpha(image: Image.Image) -> Image.Image:
    if image.mode in ("LA", "PA", "La", "RGBa") or (image.mode == "P" and "transparency" in image.info):
        return image.convert("RGBA")
    return image


def _on_white(image: Image.Image) -> Image.Image:
    if image.mode != "RGBA":
        return image
    background = Image.new("RGB", image.size, (255, 255, 255))
    background.paste(image, (0, 0), image)  # the image's alpha is the mask: alpha-compositing on white
    return background


def _native_int(image: Image.Image) -> Image.Image:
    # Big-endian 16-bit TIFFs ("I;16B"): Pillow scales only native integer modes.
    return image.convert("I") if image.mode.startswith("I;16") and image.mode != "I;16" else image


def _scaled_to_8_bits(image: Image.Image) -> Image.Image:
    if image.mode in ("I;16", "I"):
        # 16/32-bit grayscale: scale to 8 bits instead of clipping everything to white.
        return image.point(lambda value: value * (1 / 256))
    if image.mode == "F" and image.getextrema()[1] <= 1.0:  # type: ignore[operator]
        return image.point(lambda value: value * 255)  # float images in [0, 1]: not all black
    return image


def _gray(image: Image.Image) -> Image.Image:
    # A step of its own (not inside _rgb): the 32-bit input, an 8-bit and an RGB copy would be three alive.
    return image.convert("L") if image.mode in ("I;16", "I", "F") else image


def _rgb(image: Image.Image) -> Image.Image:
    return image if image.mode == "RGB" else image.convert("RGB")


def _tiny_upscaled(image: Image.Image) -> Image.Image:
    if min(image.size) >= MIN_SIDE:
        return image
    # Icons and 1x1 pixels still get a vector. Bounded: the aspect ratio check caps this at 8 x 160 pixels.
    scale = MIN_SIDE / min(image.size)
    return image.resize((max(MIN_SIDE, round(image.width * scale)), max(MIN_SIDE, round(image.height * scale))))


NORMALISE: tuple[Callable[[Image.Image], Image.Image], ...] = (
    _upright,
    _with_alpha,
    _on_white,
    _native_int,
    _scaled_to_8_bits,
    _gray,
    _rgb,
    _tiny_upscaled,
)


def to_rgb(image: Image.Image) -> Image.Image:
    """Apply EXIF orientation and flatten any mode (L, P, CMYK, RGBA, I;16 …) to RGB on white."""
    check_shape(*image.size)  # what keeps the upscaling of tiny images bounded
    for step in NORMALISE:
        image = step(image)
    return image


def load_image(path: Path, max_pixels: int = DEFAULT_MAX_PIXELS, min_side: int | None = None) -> Image.Image:
    try:
        data = read_regular_bytes(path)  # a FIFO or device: refused at once, never waited on
    except OSError as exc:
        raise ImageDecodeError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return decode_image(data, max_pixels=max_pixels, min_side=min_side)


def is_image_path(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES
