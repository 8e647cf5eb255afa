"""Contextual tag ranking (Aggarwal et al., "Towards Zero-shot Cross-lingual Image Retrieval and Tagging",
§3.3.2, eq. 3–5).

For each source tag S_j, in order, every target tag T_i gets

    Score(T_i | S_j) = W1 · cos(image, T_i) + W2 · cos(S_j, T_i)

and S_j is annotated with its best-scoring target tag that no earlier source tag has taken, so the output
has one target tag per source tag (as many as the vocabulary allows). All vectors are unit rows, so the
cosines are inner products. Beyond the paper, a target that is a near-synonym of an earlier one (the same English
sense, or a vector too close) is skipped, and answers list their tags best score first (:func:`by_score`).
"""

from __future__ import annotations

from collections.abc import Sequence
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


def assign_tags(
    scores: np.ndarray,
    targets: np.ndarray | None = None,
    senses: Sequence[str] | None = None,
    max_similarity: float | None = None,
) -> list[RankedTag]:
    """One distinct target per source row, in row order: the best one not taken by an earlier row.

    Tags that read well (no near-synonym twice in one answer): with ``senses`` (one label per target, e.g. the
    English word it translates), a target whose label an earlier row's target has is skipped; with ``targets``
    (unit rows) and ``max_similarity``, so is a target whose cosine to an earlier row's target is at least that.
    """
    n_sources, n_targets = scores.shape
    taken: list[int] = []
    used_senses: set[str] = set()
    out: list[RankedTag] = []

    def free(t: int) -> bool:
        if t in taken or (senses is not None and senses[t] in used_senses):
            return False
        if targets is not None and max_similarity is not None and taken:
            return bool(np.max(targets[taken] @ targets[t]) < max_similarity)
        return True

    for row in range(n_sources):
        choice = None
        depth = min(n_targets, 2 * len(taken) + 16)  # skipped targets are few: look at the best ones first
        while choice is None:
            best = np.argpartition(-scores[row], depth - 1)[:depth] if depth < n_targets else np.arange(n_targets)
            # Stable order: score descending, then lower index first, so ties resolve reproducibly.
            ordered = sorted(best.tolist(), key=lambda t: (-float(scores[row, t]), t))
            choice = next((t for t in ordered if free(t)), None)
            if choice is None and depth >= n_targets:
                return out  # every target is taken or too close to a taken one
            depth = min(n_targets, depth * 4)
        taken.append(choice)
        if senses is not None:
            used_senses.add(senses[choice])
        out.append(RankedTag(source=row, target=choice, score=float(scores[row, choice])))
    return out


def contextual_tags(
    image: np.ndarray,
    sources: np.ndarray,
    targets: np.ndarray,
    w1: float = DEFAULT_W1,
    w2: float = DEFAULT_W2,
    senses: Sequence[str] | None = None,
    max_similarity: float | None = None,
) -> list[RankedTag]:
    """Eq. 5 + the one-tag-per-source assignment (skipping near-synonyms, see :func:`assign_tags`). Empty when
    there are no sources or no targets."""
    if len(sources) == 0 or len(targets) == 0:
        return []
    scores = score_matrix(image, sources, targets, w1, w2)
    return assign_tags(scores, targets if max_similarity is not None else None, senses, max_similarity)


def by_score(ranked: list[RankedTag]) -> list[RankedTag]:
    """Best score first (ties: source order): how every answer lists its tags."""
    return sorted(ranked, key=lambda r: (-r.score, r.source))
