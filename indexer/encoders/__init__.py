"""Image and text encoders, built from the settings by one factory over one registry (see
:mod:`indexer.encoders.factory`)."""

from indexer.encoders.base import Encoder, ImageEncoder, TextEncoder
from indexer.encoders.factory import (
    REGISTRY,
    EncoderRequest,
    UnknownEncoderError,
    build_image_encoder,
    build_text_encoder,
    build_text_side,
    image_encoder_names,
    load_plugins,
    text_encoder_names,
)

__all__ = [
    "REGISTRY",
    "Encoder",
    "EncoderRequest",
    "ImageEncoder",
    "TextEncoder",
    "UnknownEncoderError",
    "build_image_encoder",
    "build_text_encoder",
    "build_text_side",
    "image_encoder_names",
    "load_plugins",
    "text_encoder_names",
]
