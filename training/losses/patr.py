"""Positive-Aware Triplet Ranking loss (PATR), the M3L paper's baseline.

Aggarwal et al. 2019 ("Multitask Text-to-Visual Embedding with Titles and Clickthrough Data"), as written in
Aggarwal, Tambi, Kale, "Towards Zero-shot Cross-lingual Image Retrieval and Tagging", §3.2, Eq. (2)::

    L = d(t, i⁺) + max(0, η − d(t, i⁻))

with ``d`` the squared Euclidean distance and ``i⁻`` the hardest in-batch negative image. The paper's η = 1100
is for raw ResNet-152 features; on centred unit vectors (d ∈ [0, 4]) two unrelated images sit at d ≈ 2 (cosine ≈ 0),
so the default η = 2 asks the hardest negative to be at least as far as an unrelated image. Averaged over the batch.
"""

from __future__ import annotations

import torch
from torch import nn

from training.losses.mining import hardest_negative, squared_distances
from training.losses.options import LossOption

OPTIONS = (LossOption("eta", 2.0, "PATR margin η on squared distances"),)


def patr_loss(text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor, eta: float = 2.0) -> torch.Tensor:
    text_image = squared_distances(text, image)
    negative = hardest_negative(text_image, image_ids)
    rows = torch.arange(text.shape[0], device=text.device)
    return (text_image[rows, rows] + (eta - text_image[rows, negative]).clamp_min(0)).mean()


class PATRLoss(nn.Module):
    def __init__(self, eta: float = 2.0) -> None:
        super().__init__()
        self.eta = eta

    def forward(self, text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor) -> torch.Tensor:
        return patr_loss(text, image, image_ids, eta=self.eta)
