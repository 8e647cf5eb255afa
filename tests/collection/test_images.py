"""Image decoding: EXIF orientation, odd modes, tiny and huge images, garbage and truncated files."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from indexer.encoders.preprocess import efficientnet_lite_pixels
from indexer.encoders.torch_utils import resize_center_crop
from indexer.images import MAX_ASPECT_RATIO, ImageDecodeError, decode_image, file_hash, load_image
from indexer.store.ingest import header_size


def encode(image: Image.Image, fmt: str, **kwargs: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def test_exif_orientation_is_applied() -> None:
    # A landscape 40x20 image, left half red, stored with "rotate 90° CW to display" (orientation 6).
    pixels = np.zeros((20, 40, 3), dtype=np.uint8)
    pixels[:, :20] = (255, 0, 0)
    exif = Image.Exif()
    exif[0x0112] = 6
    data = encode(Image.fromarray(pixels), "JPEG", exif=exif.tobytes(), quality=95)
    image = decode_image(data)
    assert image.size == (20, 40)  # upright: portrait
    top = np.asarray(image)[:5].mean(axis=(0, 1))
    assert top[0] > 200 and top[1] < 60  # the red half is now on top
    assert header_size(data) == (20, 40)  # the cheap header path agrees


@pytest.mark.parametrize(
    ("mode", "fmt", "value"),
    [
        ("L", "PNG", 128),
        ("CMYK", "JPEG", (0, 0, 0, 0)),
        ("P", "GIF", 3),
        ("I;16", "PNG", 40_000),
        ("LA", "PNG", (50, 255)),
    ],
)
def test_any_mode_becomes_rgb(mode: str, fmt: str, value: object) -> None:
    image = decode_image(encode(Image.new(mode, (16, 12), value), fmt))  # type: ignore[arg-type]
    assert image.mode == "RGB" and image.size == (16, 12)


def test_sixteen_bit_gray_is_scaled_not_clipped() -> None:
    image = decode_image(encode(Image.new("I;16", (16, 16), 32_768), "PNG"))
    assert 120 <= np.asarray(image)[0, 0, 0] <= 136  # half of 65535 → half of 255


def test_alpha_is_flattened_on_white() -> None:
    image = decode_image(encode(Image.new("RGBA", (10, 10), (255, 0, 0, 0)), "PNG"))
    assert tuple(np.asarray(image)[0, 0]) == (255, 255, 255)


def test_tiny_image_is_upsampled() -> None:
    image = decode_image(encode(Image.new("RGB", (1, 3), (1, 2, 3)), "PNG"))
    assert min(image.size) >= 8


def test_decompression_bomb_is_refused() -> None:
    data = encode(Image.new("L", (3000, 3000)), "PNG")  # tiny file, 9 Mpx
    with pytest.raises(ImageDecodeError, match="too large"):
        decode_image(data, max_pixels=1_000_000)
    assert decode_image(data, max_pixels=10_000_000).size == (3000, 3000)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"%PDF-1.4 hello", "not an image"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "corrupt|not an image"),
    ],
)
def test_garbage_is_a_clear_error(data: bytes, message: str) -> None:
    with pytest.raises(ImageDecodeError, match=message):
        decode_image(data)


def test_truncated_jpeg_is_an_error() -> None:
    rng = np.random.default_rng(0)
    data = encode(Image.fromarray(rng.integers(0, 255, (64, 64, 3), dtype=np.uint8)), "JPEG")
    with pytest.raises(ImageDecodeError, match=r"truncated|corrupt"):
        decode_image(data[: len(data) // 2])


def test_load_image_and_hash(tmp_path: Path) -> None:
    path = tmp_path / "a.png"
    path.write_bytes(encode(Image.new("RGB", (9, 9), (0, 255, 0)), "PNG"))
    assert load_image(path).size == (9, 9)
    assert len(file_hash(path)) == 64
    with pytest.raises(ImageDecodeError, match="cannot read"):
        load_image(tmp_path / "missing.png")


def test_aspect_ratio_limit_is_stated_in_the_refusal() -> None:
    with pytest.raises(ImageDecodeError, match=rf"image is 21×1, an aspect ratio over {MAX_ASPECT_RATIO}:1"):
        decode_image(encode(Image.new("L", (MAX_ASPECT_RATIO + 1, 1)), "PNG"))
    assert decode_image(encode(Image.new("L", (MAX_ASPECT_RATIO, 1)), "PNG")).size == (8 * MAX_ASPECT_RATIO, 8)


def test_out_of_memory_while_decoding_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def exhausted(image: Image.Image, in_place: bool = False) -> None:
        raise MemoryError

    monkeypatch.setattr("indexer.images.ImageOps.exif_transpose", exhausted)
    with pytest.raises(ImageDecodeError, match=r"too large to decode .*30x20"):
        decode_image(encode(Image.new("RGB", (30, 20)), "PNG"))


@pytest.mark.parametrize("size", [(1, 100_000), (100_000, 1), (3, 7), (640, 480), (375, 500)])
def test_resize_center_crop_gives_the_model_square_whatever_the_shape(size: tuple[int, int]) -> None:
    # The thin sizes took ~27 GB (and ~14 s) when the whole image was resized before cropping.
    image = Image.new("RGB", size, (10, 200, 30))
    out = resize_center_crop(image, 260)
    assert out.size == (260, 260)
    assert np.asarray(out).reshape(-1, 3).mean(axis=0).round().tolist() == [10, 200, 30]


def test_efficientnet_lite_pixels_are_the_arithmetic_formula_bit_for_bit() -> None:
    """The lookup table gives the floats of (x - 127) / 128 exactly, channels first and contiguous: indexes built
    before it keep their vectors (every 8-bit level appears in the noise photo)."""
    noise = np.random.default_rng(0).integers(0, 256, size=(375, 500, 3), dtype=np.uint8)
    photo = Image.fromarray(noise)
    got = efficientnet_lite_pixels(photo, 260)
    square = np.asarray(resize_center_crop(photo, 260), dtype=np.float32)
    expected = ((square - 127.0) / 128.0).transpose(2, 0, 1)
    assert got.shape == (3, 260, 260) and got.dtype == np.float32 and got.flags["C_CONTIGUOUS"]
    assert np.array_equal(got, expected)
    assert len(np.unique(square)) == 256


def test_resize_center_crop_matches_resizing_the_whole_photo() -> None:
    """Resampling only the centre square gives the model the pixels it always got (so features in existing
    indexes stay comparable): equal up to the float32 rounding of the box, a grey level on a few pixels."""
    skimage_data = pytest.importorskip("skimage.data")
    for name in ("astronaut", "chelsea", "rocket", "coffee"):
        photo = Image.fromarray(getattr(skimage_data, name)()).convert("RGB")
        for size in (224, 260):
            width, height = photo.size
            scale = size / min(width, height)
            new_w, new_h = max(size, round(width * scale)), max(size, round(height * scale))
            whole = photo.resize((new_w, new_h), Image.Resampling.BICUBIC)
            left, top = (new_w - size) // 2, (new_h - size) // 2
            expected = np.asarray(whole.crop((left, top, left + size, top + size)), dtype=int)
            got = np.asarray(resize_center_crop(photo, size), dtype=int)
            assert np.abs(got - expected).max() <= 2 and (got != expected).mean() < 0.005, (name, size)
