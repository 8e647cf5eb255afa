"""Word features for the hybrid vocabulary: 300-d (or any) word vectors reduced to 50-d by PCA (SMALR §3.1).

The paper uses monolingual FastText vectors. They are not available offline here, so the default features are
the bundled sentence encoder's embedding of the word itself (``encoder:muse``); :func:`read_vec` reads FastText's
text ``.vec`` format for when the files are at hand (``fasttext:DIR`` with ``DIR/cc.<lang>.300.vec``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

import indexer.encoders as encoders
from indexer.settings import Settings
from training.data.features import text_embeddings

PCA_DIM = 50


def read_vec(path: Path, wanted: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """FastText text format: a header ``count dim``, then ``word v1 … v_dim`` per line. Only ``wanted`` words
    are kept (all when None); malformed lines are skipped."""
    keep = set(wanted) if wanted is not None else None
    vectors: dict[str, np.ndarray] = {}
    with Path(path).open(encoding="utf-8", errors="replace") as handle:
        header = handle.readline().split()
        if len(header) != 2 or not all(part.isdigit() for part in header):
            raise ValueError(f"{path} is not a .vec file: the first line must be '<count> <dim>'")
        dim = int(header[1])
        for line in handle:
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if len(parts) != dim + 1 or (keep is not None and parts[0] not in keep):
                continue
            vectors[parts[0]] = np.asarray(parts[1:], dtype=np.float32)
    return vectors


def pca(features: np.ndarray, dim: int = PCA_DIM) -> np.ndarray:
    """Centred projection on the top ``dim`` principal components (fewer if the data has fewer)."""
    centred = features - features.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    dim = min(dim, vt.shape[0])
    return np.ascontiguousarray(centred @ vt[:dim].T, dtype=np.float32)


def word_features(
    words: list[tuple[str, str]], source: str, settings: Settings, cache_dir: Path, dim: int = PCA_DIM
) -> np.ndarray:
    """One row per (lang, word), PCA-reduced to ``dim``. ``source``: ``encoder:NAME`` or ``fasttext:DIR``."""
    kind, _, value = source.partition(":")
    if kind == "encoder":
        encoder = encoders.build_text_encoder(settings, value or "muse")
        encoder.load()
        raw = text_embeddings(encoder, [word for _, word in words], cache_dir, desc="vocabulary words")
    elif kind == "fasttext":
        raw = _fasttext_features(words, Path(value))
    else:
        raise ValueError(f"unknown word features {source!r}: use encoder:NAME (e.g. encoder:muse) or fasttext:DIR")
    return pca(np.asarray(raw, dtype=np.float32), dim)


def _fasttext_features(words: list[tuple[str, str]], folder: Path) -> np.ndarray:
    by_lang: dict[str, dict[str, np.ndarray]] = {}
    for lang in sorted({lang for lang, _ in words}):
        path = folder / f"cc.{lang}.300.vec"
        if not path.exists():
            raise FileNotFoundError(f"no FastText vectors for {lang}: {path} is missing")
        by_lang[lang] = read_vec(path, (word for word_lang, word in words if word_lang == lang))
    dim = len(next(iter(next(iter(by_lang.values())).values()), np.zeros(1)))
    known = [v for table in by_lang.values() for v in table.values()]
    # words FastText does not know take the mean vector
    fallback: np.ndarray = np.mean(known, axis=0) if known else np.zeros(dim, dtype=np.float32)
    return np.stack([by_lang[lang].get(word, fallback) for lang, word in words])
