"""The lab as a plugin of the product: what it registers with the one encoder factory
(:mod:`indexer.encoders.factory`).

:func:`register` is the ``polyglot.encoders`` entry point (pyproject.toml); the factory runs it the first time
it is asked for something the product does not have, so the service on the shipped student never imports the lab.
It registers the research sentence encoders (``muse``, ``muse-numpy``, ``laser[:path]``,
``sentence-transformers:<name-or-path>``, :mod:`training.encoders`), the ``resnet152[:name-or-path]`` image
encoder, hybrids of text encoders joined by ``+`` (``muse+e5-small``), SMALR tower folders (:mod:`training.smalr`),
the research towers' language bridges (:mod:`training.bridge`), CLC's query translators and classifier
(:mod:`training.translation`, :mod:`training.clc`) and the shipped caption alignments. Every builder imports its
module when called: heavy libraries (sentencepiece, sentence-transformers) load only for the model asked for.
The lab's commands come in the same way, through :mod:`training.cli`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.factory import EncoderRequest, Registry, UnknownEncoderError
from indexer.query.consistency import ClcReranker, QueryTranslator
from indexer.settings import Settings
from indexer.tower import SentenceBridge, TextEmbedder


def _resnet(argument: str, request: EncoderRequest) -> ImageEncoder:
    from training.encoders.resnet import DEFAULT_RESNET, ResNetEncoder

    return ResNetEncoder(argument or DEFAULT_RESNET, device=request.device, ten_crop=request.ten_crop)


def _muse(argument: str, request: EncoderRequest) -> TextEncoder:
    from training.encoders.muse import MuseOnnxEncoder

    if request.models_dir is None:
        raise UnknownEncoderError("muse reads its ONNX graph from the models folder (POLYGLOT_MODELS_DIR)")
    return MuseOnnxEncoder(request.models_dir)


def _muse_numpy(argument: str, request: EncoderRequest) -> TextEncoder:
    from training.encoders.muse import MuseNumpyEncoder

    return MuseNumpyEncoder()


def _sentence_transformers(argument: str, request: EncoderRequest) -> TextEncoder:
    from training.encoders.sentence_transformer import SentenceTransformerEncoder

    return SentenceTransformerEncoder(argument, device=request.device)


def _laser(argument: str, request: EncoderRequest) -> TextEncoder:
    from training.encoders.laser import LaserEncoder

    if request.models_dir is None:
        raise UnknownEncoderError("laser reads its weights from the models folder (POLYGLOT_MODELS_DIR)")
    return LaserEncoder(argument or None, models_dir=request.models_dir)


def _hybrid(parts: Sequence[TextEncoder]) -> TextEncoder:
    from training.encoders.hybrid import HybridTextEncoder

    return HybridTextEncoder(parts)


def _smalr(settings: Settings, folder: Path, *, sentence_cache: Path | None, threads: int | None) -> TextEmbedder:
    from training.smalr.embedder import SmalrEmbedder

    return SmalrEmbedder.from_folder(folder)


def _bridge(folder: Path) -> SentenceBridge | None:
    from training.bridge import LanguageBridge

    return LanguageBridge.from_pretrained(folder)


def _query_translator(
    settings: Settings, loaded: Sequence[TextEncoder], sentence_cache: Path | None
) -> QueryTranslator | None:
    from training.translation.factory import load_translator

    return load_translator(settings, loaded, sentence_cache)


def _clc_classifier(folder: Path) -> ClcReranker:
    from training.clc.consistency import ClcClassifier

    return ClcClassifier.load(folder)


def register(registry: Registry) -> None:
    """Add the lab's parts to the factory's registry (the ``polyglot.encoders`` entry point)."""
    from training.asset_paths import shipped_alignments
    from training.smalr.tower import KIND as SMALR_KIND

    registry.image_encoders["resnet152"] = _resnet
    registry.text_encoders.update(
        {
            "muse": _muse,
            "muse-numpy": _muse_numpy,
            "sentence-transformers": _sentence_transformers,
            "laser": _laser,
        }
    )
    registry.hybrid = _hybrid
    registry.text_sides[SMALR_KIND] = _smalr
    registry.bridge_loader = _bridge
    registry.query_translator = _query_translator
    registry.clc_classifier = _clc_classifier
    registry.caption_alignments.extend(p for p in shipped_alignments() if p not in registry.caption_alignments)
