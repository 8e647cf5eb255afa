"""SMALR's bidirectional triplet loss on a score matrix, to train CLC-C (Burns et al., ECCV 2020, Eq. 1 and 3).

    L_mm = L_triplet(I, Q⁺, Q⁻) + λ₁ · L_triplet(Q, I⁺, I⁻),   L_triplet(x, y⁺, y⁻) = max(0, m + d(x, y⁺) − d(x, y⁻))

with cosine distance (so ``d(x, y⁺) − d(x, y⁻) = s(x, y⁻) − s(x, y⁺)`` for scores ``s``), m = 0.05, λ₁ = 1.5,
and per anchor the mean over its top-N = 10 most violated negatives (Sec. 3: "compute the loss over the top-N
most violated constraints"). CLC-C's scores are not cosines but the classifier's outputs, so the loss takes the
(texts × images) score matrix itself: every text is a sentence anchor (negatives: the other images) and every
(text, image) pair an image anchor (negatives: the texts of other images). Averaged over anchors.
"""

from __future__ import annotations

import torch

MARGIN = 0.05
TOP_N = 10
TEXT_WEIGHT = 1.5  # λ₁


def clc_triplet_loss(
    scores: torch.Tensor,
    truth: torch.Tensor,
    margin: float = MARGIN,
    top_n: int = TOP_N,
    text_weight: float = TEXT_WEIGHT,
) -> torch.Tensor:
    """``scores`` (n_texts, n_images), ``truth`` (n_texts,) the column of each text's image."""
    rows = torch.arange(len(truth), device=scores.device)
    positive = scores[rows, truth]  # (n_texts,)
    own_image = torch.zeros_like(scores, dtype=torch.bool)
    own_image[rows, truth] = True
    # Sentence anchors: each text against the images that are not its own.
    text_anchor = (margin - positive[:, None] + scores).masked_fill(own_image, 0.0).clamp_min(0)
    # Image anchors: pair (t, truth[t]) against the texts t' of other images, s(t', truth[t]) as column t.
    columns = scores[:, truth]  # [t', t] = s(t', image of t)
    same = truth[:, None] == truth[None, :]
    image_anchor = (margin - positive[None, :] + columns).masked_fill(same, 0.0).clamp_min(0)
    text_top = text_anchor.topk(min(top_n, scores.shape[1]), dim=1).values.mean()
    image_top = image_anchor.topk(min(top_n, scores.shape[0]), dim=0).values.mean()
    return image_top + text_weight * text_top
