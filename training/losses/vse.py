"""Bidirectional hinge (VSE) loss with max-violation.

Faghri et al. 2017 (VSE++), as used by Kádár et al., "Bootstrapping Disjoint Datasets for Multilingual
Multimodal Representation Learning" (Eq. 1, cosine similarity, margin α = 0.2) and Burns et al. (SMALR)::

    L = max_{t̂} [α − s(t, i) + s(t̂, i)]₊  +  max_{î} [α − s(t, i) + s(t, î)]₊

``s`` is the cosine similarity; the maxima run over the other images / texts of the mini-batch (rows that show
the same image are excluded). Averaged over the batch.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from training.losses.mining import same_image_mask
from training.losses.options import LossOption

OPTIONS = (LossOption("margin", 0.2, "VSE hinge margin"),)


def vse_loss(text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor, margin: float = 0.2) -> torch.Tensor:
    scores = F.normalize(text, dim=1) @ F.normalize(image, dim=1).T  # scores[t, i]
    positive = scores.diagonal()
    same = same_image_mask(image_ids)
    # Rows of the same image are neither positives to push nor negatives to mine: fill with -inf → hinge 0.
    masked = scores.masked_fill(same, float("-inf"))
    cost_image = (margin - positive + masked.max(dim=1).values).clamp_min(0)  # text anchor vs other images
    cost_text = (margin - positive + masked.max(dim=0).values).clamp_min(0)  # image anchor vs other texts
    return (cost_image + cost_text).mean()


class VSELoss(nn.Module):
    def __init__(self, margin: float = 0.2) -> None:
        super().__init__()
        self.margin = margin

    def forward(self, text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor) -> torch.Tensor:
        return vse_loss(text, image, image_ids, margin=self.margin)
