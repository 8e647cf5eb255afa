"""Multi-modal Metric Loss (M3L).

Aggarwal, Tambi, Kale, "Towards Zero-shot Cross-lingual Image Retrieval and Tagging", §3.2, Eq. (1)::

    L = α1 · d(t, i⁺)^ρ / d(t, i⁻)^ρ  +  α2 · d(t, i⁺)^ρ / d(t, t⁻)^ρ

``d`` is the squared Euclidean distance, ``i⁻`` the hardest negative image of the mini-batch for anchor ``t``
and ``t⁻`` the caption of that negative image (the batch's text row paired with it). Paper defaults:
ρ = 4, α1 = 0.5, α2 = 1. The loss is averaged over the batch.

``bounded=True`` (our change) replaces each ratio r = (d⁺/d⁻)^ρ by r / (1 + r) =
d⁺^ρ / (d⁺^ρ + d⁻^ρ) = sigmoid(ρ · (log d⁺ − log d⁻)). The raw ratio is unbounded: when a mined negative sits on
the anchor (near-duplicate photos, or at initialisation when every caption maps to nearly the same point) one
row's ratio is orders of magnitude above the rest and the batch mean trains on that row alone. The bounded form
keeps the paper's ρ-controlled sensitivity around d⁺ ≈ d⁻ and saturates for hopeless (often false) negatives.
"""

from __future__ import annotations

import torch
from torch import nn

from training.losses.mining import hardest_negative, squared_distances
from training.losses.options import LossOption

OPTIONS = (
    LossOption("rho", 4.0, "M3L exponent ρ"),
    LossOption("alpha1", 0.5, "M3L weight of the negative image"),
    LossOption("alpha2", 1.0, "M3L weight of the negative text"),
    LossOption("bounded", False, "M3L ratio form: bounded r/(1+r), or the paper's raw ratio", "--bounded/--unbounded"),
)


def m3l_loss(
    text: torch.Tensor,
    image: torch.Tensor,
    image_ids: torch.Tensor,
    rho: float = 4.0,
    alpha1: float = 0.5,
    alpha2: float = 1.0,
    bounded: bool = False,
    eps: float = 1e-8,
) -> torch.Tensor:
    text_image = squared_distances(text, image)
    negative = hardest_negative(text_image, image_ids)
    rows = torch.arange(text.shape[0], device=text.device)
    positive_d = text_image[rows, rows]
    negative_image_d = text_image[rows, negative]
    negative_text_d = (text - text[negative]).pow(2).sum(dim=1)
    # eps keeps the ratio finite when a negative coincides with the anchor (e.g. at initialisation).
    numerator = positive_d.pow(rho)
    image_ratio = numerator / (negative_image_d.pow(rho) + eps)
    text_ratio = numerator / (negative_text_d.pow(rho) + eps)
    if bounded:
        image_ratio, text_ratio = image_ratio / (1 + image_ratio), text_ratio / (1 + text_ratio)
    return (alpha1 * image_ratio + alpha2 * text_ratio).mean()


class M3LLoss(nn.Module):
    def __init__(self, rho: float = 4.0, alpha1: float = 0.5, alpha2: float = 1.0, bounded: bool = False) -> None:
        super().__init__()
        self.rho, self.alpha1, self.alpha2, self.bounded = rho, alpha1, alpha2, bounded

    def forward(self, text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor) -> torch.Tensor:
        return m3l_loss(
            text, image, image_ids, rho=self.rho, alpha1=self.alpha1, alpha2=self.alpha2, bounded=self.bounded
        )
