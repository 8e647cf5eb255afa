"""One enum-keyed factory for every encoder: names in settings, classes here.

Spec strings: ``efficientnet-lite2``, ``efficientnet-lite0``, ``resnet152[:name-or-path]``, ``muse``,
``muse-numpy``, ``e5-small``, ``sentence-transformers:<name-or-path>``, ``laser[:path]``, and hybrids of
text encoders joined by ``+`` (``muse+e5-small``).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from indexer.encoders.base import ImageEncoder, TextEncoder


class ImageEncoderName(StrEnum):
    EFFICIENTNET_LITE0 = "efficientnet-lite0"
    EFFICIENTNET_LITE2 = "efficientnet-lite2"
    RESNET152 = "resnet152"


class TextEncoderName(StrEnum):
    MUSE = "muse"
    MUSE_NUMPY = "muse-numpy"
    E5_SMALL = "e5-small"
    SENTENCE_TRANSFORMERS = "sentence-transformers"
    LASER = "laser"


class UnknownEncoderError(ValueError):
    pass


def _split(spec: str) -> tuple[str, str]:
    kind, _, argument = spec.strip().partition(":")
    return kind.strip().lower(), argument.strip()


def create_image_encoder(spec: str, device: str = "cpu", ten_crop: bool = False) -> ImageEncoder:
    """Build (not load) the image encoder named by ``spec``."""
    kind, argument = _split(spec)
    try:
        name = ImageEncoderName(kind)
    except ValueError:
        choices = ", ".join(e.value for e in ImageEncoderName)
        raise UnknownEncoderError(f"unknown image encoder {spec!r}; choose one of: {choices}") from None
    if name is ImageEncoderName.RESNET152:
        from indexer.encoders.resnet import DEFAULT_RESNET, ResNetEncoder

        return ResNetEncoder(argument or DEFAULT_RESNET, device=device, ten_crop=ten_crop)
    if argument:
        raise UnknownEncoderError(f"{name.value} takes no argument (got {spec!r})")
    from indexer.encoders.efficientnet import EfficientNetLiteEncoder

    return EfficientNetLiteEncoder(name.value, device=device)


def create_text_encoder(spec: str, models_dir: Path, device: str = "cpu") -> TextEncoder:
    """Build (not load) the text encoder named by ``spec``."""
    if "+" in spec:
        from indexer.encoders.hybrid import HybridTextEncoder

        return HybridTextEncoder([create_text_encoder(part, models_dir, device) for part in spec.split("+")])
    kind, argument = _split(spec)
    try:
        name = TextEncoderName(kind)
    except ValueError:
        choices = ", ".join(e.value for e in TextEncoderName)
        raise UnknownEncoderError(f"unknown text encoder {spec!r}; choose one of: {choices}") from None
    if name is TextEncoderName.MUSE:
        from indexer.encoders.muse import MuseOnnxEncoder

        return MuseOnnxEncoder(models_dir)
    if name is TextEncoderName.MUSE_NUMPY:
        from indexer.encoders.muse import MuseNumpyEncoder

        return MuseNumpyEncoder()
    if name is TextEncoderName.E5_SMALL:
        from indexer.encoders.e5 import E5SmallEncoder

        return E5SmallEncoder()
    if name is TextEncoderName.SENTENCE_TRANSFORMERS:
        from indexer.encoders.sentence_transformer import SentenceTransformerEncoder

        return SentenceTransformerEncoder(argument, device=device)
    from indexer.encoders.laser import LaserEncoder

    return LaserEncoder(argument or None, models_dir=models_dir)
