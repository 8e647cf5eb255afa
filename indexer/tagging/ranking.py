"""Contextual tag ranking (Aggarwal et al., "Towards Zero-shot Cross-lingual Image Retrieval and Tagging",
§3.3.2, eq. 3–5).

For each source tag S_j, in order, every target tag T_i gets

    Score(T_i | S_j) = W1 · cos(image, T_i) + W2 · cos(S_j, T_i)

and S_j is annotated with its best-scoring target tag that no earlier source tag has taken, so the output
has one target tag per source tag (as many as the vocabulary allows). All vectors are unit rows, so the
cosines are inner products.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DEFAULT_W1 = 0.65
DEFAULT_W2 = 0.35


@dataclass(frozen=True)
class RankedTag:
    source: int  # row of the source tag
    target: int  # row of the chosen target tag
    score: float


def score_matrix(image: np.ndarray, sources: np.ndarray, targets: np.ndarray, w1: float, w2: float) -> np.ndarray:
    """(n_sources, n_targets) scores of eq. 5 for unit vectors image (d,), sources (s, d), targets (t, d)."""
    image_sim = targets @ np.asarray(image, dtype=np.float32).reshape(-1)  # eq. 3, (t,)
    source_sim = np.asarray(sources, dtype=np.float32) @ targets.T  # eq. 4, (s, t)
    return (w1 * image_sim[None, :] + w2 * source_sim).astype(np.float32)


def assign_tags(scores: np.ndarray) -> list[RankedTag]:
    """One distinct target per source row, in row order: the best one not taken by an earlier row."""
    n_sources, n_targets = scores.shape
    taken: set[int] = set()
    out: list[RankedTag] = []
    for row in range(n_sources):
        if len(taken) >= n_targets:
            break
        # At most len(taken) of the best len(taken)+1 targets are taken, so one of them is free.
        depth = min(len(taken) + 1, n_targets)
        best = np.argpartition(-scores[row], depth - 1)[:depth] if depth < n_targets else np.arange(n_targets)
        # Stable order: score descending, then lower index first, so ties resolve reproducibly.
        ordered = sorted(best.tolist(), key=lambda t: (-float(scores[row, t]), t))
        choice = next(t for t in ordered if t not in taken)
        taken.add(choice)
        out.append(RankedTag(source=row, target=choice, score=float(scores[row, choice])))
    return out


def contextual_tags(
    image: np.ndarray,
    sources: np.ndarray,
    targets: np.ndarray,
    w1: float = DEFAULT_W1,
    w2: float = DEFAULT_W2,
) -> list[RankedTag]:
    """Eq. 5 + the one-tag-per-source assignment. Empty when there are no sources or no targets."""
    if len(sources) == 0 or len(targets) == 0:
        return []
    return assign_tags(score_matrix(image, sources, targets, w1, w2))
