"""Image and text encoders, built from the settings by one factory (see :mod:`indexer.encoders.factory`)."""

from indexer.encoders.base import Encoder, ImageEncoder, TextEncoder
from indexer.encoders.factory import (
    ImageEncoderName,
    TextEncoderName,
    UnknownEncoderError,
    build_image_encoder,
    build_text_encoder,
    build_text_side,
)

__all__ = [
    "Encoder",
    "ImageEncoder",
    "ImageEncoderName",
    "TextEncoder",
    "TextEncoderName",
    "UnknownEncoderError",
    "build_image_encoder",
    "build_text_encoder",
    "build_text_side",
]
