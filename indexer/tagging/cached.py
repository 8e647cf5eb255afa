"""Text → index-space vectors through the features cache: a vocabulary or caption set is encoded once.

The frozen sentence embeddings are cached by text (the same cache training uses); the tower is applied on
top every time, so a new tower never reads stale vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from indexer.sentence_cache import cached_sentences
from indexer.tagging.source_tags import MatrixCaptionRetriever
from indexer.tagging.vocabulary import read_texts
from indexer.tower import TextEmbedder


def embed_cached(
    text: TextEmbedder,
    texts: Sequence[str],
    cache_dir: Path,
    progress: Callable[[int], object] | None = None,
    lang: str | None = None,
) -> np.ndarray:
    """``lang``: the texts' language, for the tower's language bridge (None: as encoded). A tower whose text
    model gives no sentence embeddings to cache (a SMALR tower: encoder dim 0) embeds the texts directly."""
    if not text.encoder.dim:
        vectors = text.embed(texts, lang)
        if progress is not None:
            progress(len(texts))
        return vectors
    sentences = cached_sentences(text.encoder, texts, cache_dir, progress=progress)
    return text.embed_sentences(sentences, lang) if len(texts) else np.zeros((0, text.dim), np.float32)


def caption_retriever_from_file(
    path: Path, text: TextEmbedder, cache_dir: Path, progress: Callable[[int], object] | None = None
) -> MatrixCaptionRetriever:
    """English captions of a JSONL caption collection (or plain lines), embedded for image→caption search."""
    captions = list(dict.fromkeys(read_texts(path, "en")))
    return MatrixCaptionRetriever(captions, embed_cached(text, captions, cache_dir, progress))
