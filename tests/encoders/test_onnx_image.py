"""The image encoder through ONNX Runtime gives the eager PyTorch model's features (the reference).

Tolerance: cosine ≥ 0.9999 per photo and |Δ| ≤ 1e-4 · max|feature| (measured: 0.9999999 and ~2e-6 on 64
Flickr8k photos), class probabilities within 1e-5 — close enough that both backends share one features
cache and one index.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from indexer.built_models import build
from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder
from indexer.encoders.factory import create_image_encoder
from indexer.export.registry import IMAGE_EXPORTS

pytestmark = pytest.mark.slow
PHOTOS = Path(__file__).resolve().parents[3] / "shared" / "data" / "m30k-f8k" / "images"


def sample_images() -> list[Image.Image]:
    images = [Image.new("RGB", (50, 70), (200, 30, 30))]
    scene = Image.new("RGB", (320, 240), (110, 160, 230))
    draw = ImageDraw.Draw(scene)
    draw.rectangle((0, 150, 320, 240), fill=(60, 150, 50))
    draw.ellipse((230, 20, 290, 80), fill=(255, 220, 40))
    images.append(scene)
    photos = sorted(PHOTOS.glob("*.jpg"))[:6] if PHOTOS.exists() else []
    return images + [Image.open(path).convert("RGB") for path in photos]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    build(IMAGE_EXPORTS["efficientnet-lite0"], folder)
    return folder


def test_onnx_matches_torch(models_dir: Path) -> None:
    import torch

    torch.set_num_threads(1)
    reference = create_image_encoder("efficientnet-lite0", backend="torch")
    onnx = create_image_encoder("efficientnet-lite0", models_dir=models_dir, threads=1)
    assert isinstance(onnx, EfficientNetLiteOnnxEncoder)
    reference.load()
    onnx.load()
    images = sample_images()
    expected, got = reference.predict(images), onnx.predict(images)
    assert got.shape == expected.shape == (len(images), 1280)
    cosine = (expected * got).sum(axis=1) / np.linalg.norm(expected, axis=1) / np.linalg.norm(got, axis=1)
    assert cosine.min() >= 0.9999
    assert np.abs(expected - got).max() <= 1e-4 * np.abs(expected).max()
    np.testing.assert_allclose(onnx.classify(expected), reference.classify(expected), atol=1e-5)
    # Batching does not change a photo's features (the indexer batches, the service embeds one at a time).
    np.testing.assert_allclose(onnx.predict(images[1:2])[0], got[1], atol=1e-4 * np.abs(got).max())
    prepared = [onnx.prepare(image) for image in images]
    np.testing.assert_array_equal(onnx.predict_prepared(prepared), got)
    # The indexer's workers run calls on a one-thread session of their own: the same features.
    assert onnx.per_call_threads
    np.testing.assert_allclose(onnx.predict_prepared(prepared, threads=1), got, atol=1e-5 * np.abs(got).max())
