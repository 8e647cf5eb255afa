"""Every model of the query pipeline, built from settings in one place.

The service's lifespan, the CLI, the tagger, ``polyglot evaluate`` and the benchmarks all call
:func:`load_models`: the one text side (POLYGLOT_TOWER_PATH, default the shipped student, :mod:`indexer.student`,
which reads every language itself; a research tower folder brings its language bridge; a SMALR tower,
:mod:`training.smalr`, carries its own text model), the caption alignments (with the sentence encoder each reads),
CLC's query translator and classifier, and the image encoder are wired and checked the same way everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from indexer.asset_paths import shipped_tower_path
from indexer.captions.alignment import AlignmentError, CaptionAlignment
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.factory import REGISTRY, build_image_encoder, build_text_encoder, build_text_side, load_plugins
from indexer.image_space import ImageSpace
from indexer.query.consistency import ClcReranker, QueryTranslator
from indexer.query.pipeline import ConceptFusion, load_concept_fusion
from indexer.settings import Settings, warn_removed_settings
from indexer.tower import TextEmbedder

T = TypeVar("T")


class ModelsError(ValueError):
    """The configured models do not fit together; the message says which setting to change."""


@dataclass
class Models:
    text: TextEmbedder  # the one text side: every query language, captions and tags
    image_encoder: ImageEncoder  # the frozen CNN (loaded on first use unless load_models(load_image=True))
    translator: QueryTranslator | None = None  # CLC's query translator (POLYGLOT_CLC_TRANSLATOR)
    clc_classifier: ClcReranker | None = None  # CLC-C's MLP (POLYGLOT_CLC_CLASSIFIER)
    text_folder: str = ""  # the folder the text side was loaded from ("" when given ready-made)
    # Caption alignments (POLYGLOT_CAPTION_ALIGNMENTS) and, per encoder name, the sentence encoder they read.
    alignments: list[CaptionAlignment] = field(default_factory=list)
    alignment_encoders: dict[str, TextEncoder] = field(default_factory=dict)
    load_seconds: dict[str, float] = field(default_factory=dict)
    fusion: ConceptFusion | None = None  # POLYGLOT_CONCEPT_FUSION_WEIGHT > 0: names of concepts fused in

    @property
    def image_space(self) -> ImageSpace:
        return self.text.tower.image_space

    @property
    def label(self) -> str:
        """What answers every query, as ``polyglot evaluate`` and ``polyglot search`` report it: the text
        encoder and the folder it came from, e.g. ``e5-student:student`` or ``muse+e5-small:tower``."""
        name = self.text.encoder.name
        return f"{name}:{Path(self.text_folder).name}" if self.text_folder else name


def timed(seconds: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = fn()
    seconds[name] = time.perf_counter() - start
    return result


def load_models(
    settings: Settings,
    *,
    load_image: bool = False,
    bridge: bool = True,
    alignments: bool = True,
    sentence_cache: Path | None = None,
    threads: int | None = None,
    text: TextEmbedder | None = None,
    image_encoder: ImageEncoder | None = None,
    translator: QueryTranslator | None = None,
    clc: bool = True,
) -> Models:
    """Load (blocking: seconds) what ``settings`` configure. ``bridge``/``alignments`` = False leave a research
    tower's language bridge or the caption alignments out whatever the settings say; ``sentence_cache`` routes
    text encodings through the features cache (evaluation); ``threads`` sets the ONNX/numpy text encoders'
    intra-op threads (the service: one per request).

    ``text``/``image_encoder``: ready parts used instead of loading them (tests pass small fakes).
    ``translator``: CLC's translator instead of POLYGLOT_CLC_TRANSLATOR's (evaluation's parallel captions);
    ``clc`` = False leaves the CLC translator and classifier out."""
    warn_removed_settings()
    seconds: dict[str, float] = {}
    folder = ""
    if text is None:
        path = settings.models.tower_path or shipped_tower_path(settings.models.text_encoder)
        folder = str(path)
        text = timed(seconds, "text_embedder", lambda: _load_text(path, settings, bridge, sentence_cache, threads))
    if text.tower.image_encoder != settings.models.image_encoder:
        raise ModelsError(
            f"the text side was trained for image encoder {text.tower.image_encoder!r}, but "
            f"POLYGLOT_IMAGE_ENCODER is {settings.models.image_encoder!r}: set it to {text.tower.image_encoder}"
        )
    image_encoder = image_encoder or build_image_encoder(settings)
    if load_image and not image_encoder.loaded:
        timed(seconds, "image_encoder", image_encoder.load)
    found, encoders = (
        timed(seconds, "alignments", lambda: load_alignments(settings, text, threads)) if alignments else ([], {})
    )
    models = Models(text, image_encoder, text_folder=folder, alignments=found, alignment_encoders=encoders)
    if settings.query.concept_fusion_weight > 0:
        models.fusion = timed(seconds, "concept_fusion", lambda: load_fusion(settings, text))
    if clc:
        load_clc(models, settings, translator, sentence_cache, seconds)
    models.load_seconds = seconds
    return models


def load_fusion(settings: Settings, text: TextEmbedder) -> ConceptFusion:
    """The query pipeline's :func:`~indexer.query.pipeline.load_concept_fusion` for its text side."""
    return load_concept_fusion(settings, text, text.fingerprint)


def load_alignments(
    settings: Settings, text: TextEmbedder, threads: int | None = None
) -> tuple[list[CaptionAlignment], dict[str, TextEncoder]]:
    """The caption alignments and the sentence encoder of each, reusing the text side's encoder (or a part of a
    hybrid tower's) when it is the one an alignment reads. The shipped alignments (mUSE) are used only when such
    an encoder is loaded anyway (a research tower over mUSE; the student reads none of theirs); configured ones
    load their encoder if they must."""
    encoder = text.encoder
    parts = list(encoder.parts) or [encoder]
    loaded: dict[str, TextEncoder] = {part.name: part for part in [*parts, encoder]}
    configured = settings.query.caption_alignments is not None
    folders = (
        settings.query.caption_alignments
        if settings.query.caption_alignments is not None
        else REGISTRY.caption_alignments
    )
    found: list[CaptionAlignment] = []
    encoders: dict[str, TextEncoder] = {}
    pairs: dict[frozenset[str], str] = {}
    for folder in folders:
        try:
            alignment = CaptionAlignment(folder)
        except AlignmentError as exc:
            raise ModelsError(f"POLYGLOT_CAPTION_ALIGNMENTS: {exc}") from None
        name = alignment.text_encoder
        if name not in loaded and not configured:
            continue
        pair = frozenset(alignment.langs)
        if pair in pairs:
            raise ModelsError(f"POLYGLOT_CAPTION_ALIGNMENTS: two alignments for {'/'.join(sorted(pair))}: {folder}")
        pairs[pair] = str(folder)
        if name not in encoders:
            encoders[name] = loaded.get(name) or _new_encoder(name, settings, threads)
        if encoders[name].dim and encoders[name].dim != alignment.input_dim:
            raise ModelsError(
                f"{folder} maps {alignment.input_dim}-d sentence embeddings; {name} gives {encoders[name].dim}"
            )
        found.append(alignment)
    return found, encoders


def _new_encoder(name: str, settings: Settings, threads: int | None) -> TextEncoder:
    encoder = build_text_encoder(settings, name, threads=threads)
    encoder.load()
    return encoder


def load_clc(
    models: Models,
    settings: Settings,
    translator: QueryTranslator | None,
    sentence_cache: Path | None,
    seconds: dict[str, float],
) -> None:
    """CLC's translator and classifier (POLYGLOT_CLC_*), from the plugin that registers them (the lab's); a
    classifier must have been trained for the same translation languages as configured (its inputs are one score
    per language). Nothing configured: nothing loads, and no plugin is looked for."""
    wanted = settings.query.clc_translator is not None or settings.query.clc_classifier is not None
    if translator is None and wanted and (REGISTRY.query_translator is None or REGISTRY.clc_classifier is None):
        load_plugins()
    if translator is None and settings.query.clc_translator is not None:
        if REGISTRY.query_translator is None:
            raise ModelsError(
                f"POLYGLOT_CLC_TRANSLATOR={settings.query.clc_translator}: no installed package provides query "
                "translators (the lab, training/, does)"
            )
        load = REGISTRY.query_translator
        encoders = [models.text.encoder]
        translator = timed(seconds, "clc_translator", lambda: load(settings, encoders, sentence_cache))
    models.translator = translator
    if settings.query.clc_classifier is not None:
        if REGISTRY.clc_classifier is None:
            raise ModelsError(
                "POLYGLOT_CLC_CLASSIFIER: no installed package reads CLC classifiers (the lab, training/, does)"
            )
        models.clc_classifier = REGISTRY.clc_classifier(settings.query.clc_classifier)


def _load_text(
    folder: Path, settings: Settings, bridge: bool, sentence_cache: Path | None, threads: int | None
) -> TextEmbedder:
    embedder = build_text_side(settings, folder, bridge=bridge, sentence_cache=sentence_cache, threads=threads)
    embedder.load()
    return embedder


def load_text_tower(settings: Settings, folder: Path | None = None, **options: object) -> TextEmbedder:
    """The text side alone (a research tower with its bridge), e.g. to embed captions or tag vocabularies;
    ``folder`` overrides ``settings.models.tower_path`` (research scripts compare towers)."""
    if folder is not None:
        settings = settings.model_copy(update={"tower_path": folder})
    return load_models(settings, **options).text  # type: ignore[arg-type]
