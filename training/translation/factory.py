"""The translator the settings configure (POLYGLOT_CLC_TRANSLATOR), built by :func:`indexer.query.load_models`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.sentence_cache import cached_sentences
from indexer.settings import Settings
from training.glosses import LexiconTranslator
from training.translation.base import QueryTranslator, TranslationError
from training.translation.gloss import GlossTranslator
from training.translation.mt import find_mt_translator
from training.translation.retrieval import Embed, RetrievalTranslator

TRANSLATORS = ("gloss", "retrieval", "mt")


def load_translator(
    settings: Settings,
    loaded: Sequence[TextEncoder] = (),
    sentence_cache: Path | None = None,
    encoder: TextEncoder | None = None,
) -> QueryTranslator | None:
    """None when POLYGLOT_CLC_TRANSLATOR is unset. ``loaded``: encoders already in memory (the retrieval
    translator reuses one of the configured name rather than loading mUSE twice); ``encoder``: use this one."""
    kind = settings.query.clc_translator
    if kind is None:
        return None
    if kind == "gloss":
        folder = settings.query.clc_lexicons_dir
        if folder is None:
            raise TranslationError(
                "the gloss translator needs dictionaries: set POLYGLOT_CLC_LEXICONS_DIR (--lexicons)"
            )
        return GlossTranslator(LexiconTranslator.from_folder(folder))
    if kind == "retrieval":
        if settings.query.clc_corpus is None:
            raise TranslationError(
                "the retrieval translator needs a caption collection: set POLYGLOT_CLC_CORPUS (--translation-corpus)"
            )
        encoder = encoder or find_encoder(loaded, settings)
        return RetrievalTranslator.open_or_build(
            settings.query.clc_corpus,
            settings.query.clc_languages,
            sentence_embedder(encoder, settings.resolved_cache_dir),
            encoder.name,
            settings.resolved_cache_dir,
        ).with_queries(sentence_embedder(encoder, sentence_cache), encoder.languages, settings.query.clc_min_similarity)
    if kind == "mt":
        translator = find_mt_translator()
        if translator is None:
            raise TranslationError(
                "POLYGLOT_CLC_TRANSLATOR=mt needs argostranslate with its language packages installed"
            )
        return translator
    raise TranslationError(f"unknown translator {kind!r}; choose one of: {', '.join(TRANSLATORS)}")


def find_encoder(loaded: Sequence[TextEncoder], settings: Settings) -> TextEncoder:
    for encoder in loaded:
        parts = list(encoder.parts) or [encoder]
        for part in parts:
            if part.name == settings.query.clc_encoder:
                return part
    from indexer.encoders.factory import build_text_encoder

    return build_text_encoder(settings, settings.query.clc_encoder)


def sentence_embedder(encoder: TextEncoder, cache: Path | None) -> Embed:
    def embed(texts: list[str]) -> np.ndarray:
        if cache is not None:
            return cached_sentences(encoder, texts, cache)
        if not encoder.loaded:
            encoder.load()
        return encoder.predict(texts)

    return embed
