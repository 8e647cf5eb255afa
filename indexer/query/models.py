"""Every model of the query pipeline, built from settings in one place.

The service's lifespan, the CLI, the tagger, ``polyglot evaluate`` and the benchmarks all call
:func:`load_models`: the main text tower (with its language bridge; or a SMALR tower, :mod:`indexer.smalr`,
which carries its own text model), the optional fast tower, the English-gloss dictionaries, the caption
alignments (with the sentence encoder each reads) and the image encoder are wired and checked the same way
everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from indexer.captions.alignment import AlignmentError, CaptionAlignment, shipped_alignments
from indexer.embedders import TextEmbedder, shipped_tower_path
from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.factory import create_text_encoder, image_encoder_from_settings
from indexer.encoders.hybrid import HybridTextEncoder
from indexer.glosses import LexiconTranslator
from indexer.image_space import ImageSpace
from indexer.indexer_settings import IndexerSettings
from indexer.query.clc import ClcClassifier
from indexer.smalr import SmalrEmbedder, is_smalr_folder
from indexer.student.encoder import StudentEmbedder
from indexer.student.model import is_student_folder
from indexer.translation.base import QueryTranslator

T = TypeVar("T")


class ModelsError(ValueError):
    """The configured models do not fit together; the message says which setting to change."""


@dataclass
class Models:
    text: TextEmbedder  # the main tower: every language its encoder covers, captions and tags
    image_encoder: ImageEncoder  # the frozen CNN (loaded on first use unless load_models(load_image=True))
    fast_text: TextEmbedder | None = None  # a cheaper tower in the same image space (POLYGLOT_FAST_TOWER)
    glosses: LexiconTranslator | None = None  # English glosses of queries (POLYGLOT_LEXICONS_DIR)
    translator: QueryTranslator | None = None  # CLC's query translator (POLYGLOT_CLC_TRANSLATOR)
    clc_classifier: ClcClassifier | None = None  # CLC-C's MLP (POLYGLOT_CLC_CLASSIFIER)
    tower_names: dict[str, str] = field(default_factory=dict)  # "main"/"fast" → the tower folder's name
    # Caption alignments (POLYGLOT_CAPTION_ALIGNMENTS) and, per encoder name, the sentence encoder they read.
    alignments: list[CaptionAlignment] = field(default_factory=list)
    alignment_encoders: dict[str, TextEncoder] = field(default_factory=dict)
    load_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def image_space(self) -> ImageSpace:
        return self.text.tower.image_space


def timed(seconds: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    start = time.perf_counter()
    result = fn()
    seconds[name] = time.perf_counter() - start
    return result


def load_models(
    settings: IndexerSettings,
    *,
    load_image: bool = False,
    fast: bool = True,
    glosses: bool = True,
    bridge: bool = True,
    alignments: bool = True,
    sentence_cache: Path | None = None,
    threads: int | None = None,
    text: TextEmbedder | None = None,
    fast_text: TextEmbedder | None = None,
    image_encoder: ImageEncoder | None = None,
    translator: QueryTranslator | None = None,
    clc: bool = True,
) -> Models:
    """Load (blocking: seconds) what ``settings`` configure. ``fast``/``glosses``/``bridge``/``alignments`` = False
    leave those parts out whatever the settings say (e.g. the caption commands need the main tower alone);
    ``sentence_cache`` routes text encodings through the features cache (evaluation); ``threads`` sets the ONNX/numpy text encoders'
    intra-op threads (the service: one per request).

    ``text``/``fast_text``/``image_encoder``: ready parts used instead of loading them (tests pass small fakes);
    a given main tower takes no fast tower from the settings, only the ``fast_text`` given with it.
    ``translator``: CLC's translator instead of POLYGLOT_CLC_TRANSLATOR's (evaluation's parallel captions);
    ``clc`` = False leaves the CLC translator and classifier out."""
    seconds: dict[str, float] = {}
    main_path = settings.tower_path or shipped_tower_path()
    fast_path = settings.resolved_fast_tower if fast else None
    given = text is not None
    if text is None:
        text = timed(seconds, "text_embedder", lambda: _load_text(main_path, settings, bridge, sentence_cache, threads))
        if fast_path is not None:
            fast_text = timed(
                seconds, "fast_text_embedder", lambda: _load_text(fast_path, settings, bridge, sentence_cache, threads)
            )
    if text.tower.image_encoder != settings.image_encoder:
        raise ModelsError(
            f"the text tower was trained for image encoder {text.tower.image_encoder!r}, but "
            f"POLYGLOT_IMAGE_ENCODER is {settings.image_encoder!r}: set it to {text.tower.image_encoder}"
        )
    names = {"main": Path(main_path).name}
    if fast_text is not None:
        check_same_space(text, fast_text, "the fast tower" if given else fast_path)
        names["fast"] = fast_text.encoder.name if given or fast_path is None else Path(fast_path).name
    glosses_translator = None
    if glosses and settings.lexicons_dir is not None:
        folder, langs = settings.lexicons_dir, text.languages
        glosses_translator = timed(seconds, "lexicons", lambda: LexiconTranslator.from_folder(folder, langs))
    image_encoder = image_encoder or image_encoder_from_settings(settings)
    if load_image and not image_encoder.loaded:
        timed(seconds, "image_encoder", image_encoder.load)
    found, encoders = (
        timed(seconds, "alignments", lambda: load_alignments(settings, text, fast_text, threads))
        if alignments
        else ([], {})
    )
    models = Models(
        text,
        image_encoder,
        fast_text,
        glosses_translator,
        tower_names=names,
        alignments=found,
        alignment_encoders=encoders,
    )
    if clc:
        load_clc(models, settings, translator, sentence_cache, seconds)
    models.load_seconds = seconds
    return models


def load_alignments(
    settings: IndexerSettings, text: TextEmbedder, fast_text: TextEmbedder | None = None, threads: int | None = None
) -> tuple[list[CaptionAlignment], dict[str, TextEncoder]]:
    """The caption alignments and the sentence encoder of each, reusing a loaded tower's encoder (or a part of
    the main tower's hybrid) when it is the one an alignment reads. The shipped alignments are used only when
    such an encoder is loaded anyway; configured ones load their encoder if they must."""
    loaded: dict[str, TextEncoder] = {}
    for embedder in (fast_text, text):
        if embedder is None:
            continue
        encoder = embedder.encoder
        parts = encoder.parts if isinstance(encoder, HybridTextEncoder) else [encoder]
        loaded.update({part.name: part for part in [*parts, encoder]})
    configured = settings.caption_alignments is not None
    folders = settings.caption_alignments if settings.caption_alignments is not None else shipped_alignments()
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


def _new_encoder(name: str, settings: IndexerSettings, threads: int | None) -> TextEncoder:
    encoder = create_text_encoder(
        name,
        settings.resolved_models_dir,
        device=settings.device,
        backend=settings.encoder_backend,
        e5_precision=settings.e5_precision,
    )
    if threads is not None and hasattr(encoder, "threads"):
        encoder.threads = threads
    encoder.load()
    return encoder


def load_clc(
    models: Models,
    settings: IndexerSettings,
    translator: QueryTranslator | None,
    sentence_cache: Path | None,
    seconds: dict[str, float],
) -> None:
    """CLC's translator and classifier (POLYGLOT_CLC_*); a classifier must have been trained for the same
    translation languages as configured (its inputs are one score per language)."""
    from indexer.translation.factory import load_translator

    encoders = [e.encoder for e in (models.text, models.fast_text) if e is not None]
    models.translator = translator or timed(
        seconds, "clc_translator", lambda: load_translator(settings, encoders, sentence_cache)
    )
    if settings.clc_classifier is not None:
        models.clc_classifier = ClcClassifier.load(settings.clc_classifier)


def _load_text(
    folder: Path, settings: IndexerSettings, bridge: bool, sentence_cache: Path | None, threads: int | None
) -> TextEmbedder:
    if is_student_folder(folder):  # the student reads text itself: its own trunk, no bridge
        student = StudentEmbedder.from_folder(
            folder,
            settings.resolved_models_dir,
            device=settings.device,
            precision=settings.e5_precision,  # type: ignore[arg-type]
            threads=threads,
            sentence_cache=sentence_cache,
        )
        student.load()
        return student
    if is_smalr_folder(folder):  # a SMALR tower is its own text encoder (tokenizer, vocabulary, GRU)
        smalr = SmalrEmbedder.from_folder(folder)
        smalr.load()
        return smalr
    embedder = TextEmbedder.from_tower(
        folder,
        settings.resolved_models_dir,
        device=settings.device,
        bridge=bridge,
        sentence_cache=sentence_cache,
        backend=settings.encoder_backend,
        e5_precision=settings.e5_precision,
    )
    if threads is not None and hasattr(embedder.encoder, "threads"):  # ONNX/numpy encoders read it at load
        embedder.encoder.threads = threads
    embedder.load()
    return embedder


def check_same_space(main: TextEmbedder, fast: TextEmbedder, fast_path: object) -> None:
    """Both towers must search one index: same image encoder, image space and output size."""
    ours, theirs = main.tower, fast.tower
    same = (
        ours.image_encoder == theirs.image_encoder
        and ours.image_space.fingerprint == theirs.image_space.fingerprint
        and main.dim == fast.dim
    )
    if not same:
        raise ModelsError(
            f"POLYGLOT_FAST_TOWER {fast_path} maps into {theirs.image_encoder} / "
            f"{theirs.image_space.fingerprint}, the main tower into {ours.image_encoder} / "
            f"{ours.image_space.fingerprint}: train it with --image-space-from the main tower, or set it to off"
        )


def load_text_tower(settings: IndexerSettings, folder: Path | None = None, **options: object) -> TextEmbedder:
    """The main tower alone (with its bridge), e.g. to embed captions or tag vocabularies; ``folder`` overrides
    ``settings.tower_path`` (research scripts compare towers)."""
    if folder is not None:
        settings = settings.model_copy(update={"tower_path": folder})
    return load_models(settings, fast=False, glosses=False, **options).text  # type: ignore[arg-type]
