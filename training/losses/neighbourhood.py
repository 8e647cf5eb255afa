"""Neighbourhood constraints L_nc: sentences describing the same image embed near each other.

Burns et al. (SMALR) §3.3, after Wang et al.'s Embedding Network and MULE: the triplet loss of Eq. (1) (cosine,
m = 0.05, top-10 most violated) between two sentences of the same image, possibly in different languages, every
other sentence of the batch a negative, taken in both directions. SMALR applies it to the universal language
embedding (the HEM output) and to the final sentence representation, weighted λ4 = 5e-2 in Eq. (4).
"""

from __future__ import annotations

import torch
from torch import nn

from training.losses.triplet import MARGIN, TOP_N, topn_triplet_loss


def neighbourhood_loss(
    first: torch.Tensor, second: torch.Tensor, margin: float = MARGIN, top_n: int = TOP_N
) -> torch.Tensor:
    """Row ``k`` of ``first`` and ``second``: two unit sentence vectors of image ``k``."""
    return topn_triplet_loss(first, second, margin, top_n) + topn_triplet_loss(second, first, margin, top_n)


class NeighbourhoodLoss(nn.Module):
    def __init__(self, margin: float = MARGIN, top_n: int = TOP_N) -> None:
        super().__init__()
        self.margin, self.top_n = margin, top_n

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return neighbourhood_loss(first, second, self.margin, self.top_n)
