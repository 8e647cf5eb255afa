"""Retrieval recalls on unit vectors (inner product = cosine), numpy only.

* text→image: a query hits at K when its own image is among the K best-scored images of the pool.
* image→text: an image hits at K when *any* of its captions (in the language evaluated) is among the K
  best-scored captions of that language.
Ties count against the query (rank = number of *other* candidates scoring at least as high as the best true
one), so a collapsed model that scores everything alike gets chance-level recall, not a perfect one.
"""

from __future__ import annotations

import numpy as np

KS = (1, 5, 10)


def _recalls(ranks: np.ndarray) -> dict[str, float]:
    return {f"r{k}": float(np.mean(ranks < k)) if len(ranks) else 0.0 for k in KS}


def t2i_ranks(queries: np.ndarray, query_image: np.ndarray, images: np.ndarray, chunk: int = 4096) -> np.ndarray:
    ranks = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), chunk):
        scores = queries[start : start + chunk] @ images.T
        rows = np.arange(scores.shape[0])
        true = scores[rows, query_image[start : start + chunk]]
        ranks[start : start + chunk] = (scores >= true[:, None]).sum(axis=1) - 1
    return ranks


def i2t_ranks(images: np.ndarray, texts: np.ndarray, text_image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best rank of each captioned image's own captions; returns (image indices with captions, ranks)."""
    scores = images @ texts.T  # (n_images, n_texts)
    own = np.zeros_like(scores, dtype=bool)
    own[text_image, np.arange(len(text_image))] = True
    best_true = np.where(own, scores, -np.inf).max(axis=1)
    captioned = np.flatnonzero(own.any(axis=1))
    ranks = ((scores[captioned] >= best_true[captioned, None]) & ~own[captioned]).sum(axis=1)
    return captioned, ranks


def language_recalls(
    images: np.ndarray, texts: np.ndarray, text_image: np.ndarray, ranks: np.ndarray | None = None
) -> dict[str, object]:
    """The JSON block of one language: t2i, i2t recalls, their mean mR and the number of text queries.
    ``ranks``: the texts' text→image ranks when already known (e.g. from the served index)."""
    t2i = _recalls(t2i_ranks(texts, text_image, images) if ranks is None else ranks)
    i2t = _recalls(i2t_ranks(images, texts, text_image)[1])
    values = [*t2i.values(), *i2t.values()]
    return {"t2i": t2i, "i2t": i2t, "mR": float(np.mean(values)), "queries": len(texts)}


def recall_sum(block: dict[str, object]) -> float:
    t2i, i2t = block["t2i"], block["i2t"]
    assert isinstance(t2i, dict) and isinstance(i2t, dict)
    return float(sum(t2i.values()) + sum(i2t.values()))


def c2c_recall_at_1(source: np.ndarray, target: np.ndarray) -> float:
    """Row k of ``source`` and of ``target`` describe the same image: R@1 of finding row k from row k."""
    scores = source @ target.T
    true = scores.diagonal()
    return float(np.mean((scores >= true[:, None]).sum(axis=1) == 1)) if len(source) else 0.0
