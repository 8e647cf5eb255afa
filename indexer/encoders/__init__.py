"""Image and text encoders behind one factory (see :mod:`indexer.encoders.factory`)."""

from indexer.encoders.base import Encoder, ImageEncoder, TextEncoder
from indexer.encoders.factory import (
    ImageEncoderName,
    TextEncoderName,
    UnknownEncoderError,
    create_image_encoder,
    create_text_encoder,
)

__all__ = [
    "Encoder",
    "ImageEncoder",
    "ImageEncoderName",
    "TextEncoder",
    "TextEncoderName",
    "UnknownEncoderError",
    "create_image_encoder",
    "create_text_encoder",
]
