"""Masked cross-language modelling (MCLM), SMALR's Eq. (2).

Burns et al. (SMALR) §3.2: two sentences ``(S_i, S_j)`` of the same image in languages i ≠ j have 20 % of their
words masked, ``(S_iᵐ, S_jᵐ)``; the two masked representations are concatenated and one fully connected layer
(shared by all language pairs) predicts the missing information of both, ``(S_i', S_j')``; the loss compares
the completed sentences with the unmasked ones::

    L_mask = ‖ℓ2(S_iᵐ + S_i') − ℓ2(S_i)‖ + ‖ℓ2(S_jᵐ + S_j') − ℓ2(S_j)‖

(averaged over the batch). Applied to the universal embedding (average of word embeddings, masked words
removed) and to the final sentence representation (the GRU over the sentence with MASK tokens, supplementary
§7.4); weighted λ2 = 1e-4 in Eq. (4).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def mclm_loss(
    masked_i: torch.Tensor,
    predicted_i: torch.Tensor,
    full_i: torch.Tensor,
    masked_j: torch.Tensor,
    predicted_j: torch.Tensor,
    full_j: torch.Tensor,
) -> torch.Tensor:
    """All (B, D): Eq. (2) per row, mean over rows."""
    first = (F.normalize(masked_i + predicted_i, dim=-1) - F.normalize(full_i, dim=-1)).norm(dim=-1)
    second = (F.normalize(masked_j + predicted_j, dim=-1) - F.normalize(full_j, dim=-1)).norm(dim=-1)
    return (first + second).mean()


class MCLMHead(nn.Module):
    """The shared FC layer: ``[S_iᵐ; S_jᵐ]`` (2D) → ``[S_i'; S_j']`` (2D), and Eq. (2) on its output."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.predict = nn.Linear(2 * dim, 2 * dim)

    def forward(
        self, masked_i: torch.Tensor, masked_j: torch.Tensor, full_i: torch.Tensor, full_j: torch.Tensor
    ) -> torch.Tensor:
        predicted_i, predicted_j = self.predict(torch.cat([masked_i, masked_j], dim=-1)).chunk(2, dim=-1)
        return mclm_loss(masked_i, predicted_i, full_i, masked_j, predicted_j, full_j)
