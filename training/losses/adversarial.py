"""The adversarial language classifier L_adv (MULE, used by SMALR §3.3; λ3 = 1e-6 in Eq. (4)).

Kim et al., "MULE: Multimodal Universal Language Embedding" (AAAI 2020): a classifier predicts each sentence's
language from its universal embedding; a gradient-reversal layer (Ganin & Lempitsky) between them lets the
classifier minimise its cross-entropy while the embedding maximises it, so the languages' feature distributions
become indistinguishable. The loss value is the classifier's cross-entropy; the reversal acts on gradients only.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class _ReverseGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return -grad


def reverse_gradient(x: torch.Tensor) -> torch.Tensor:
    """Identity forward, negated gradient backward."""
    out: torch.Tensor = _ReverseGradient.apply(x)
    return out


def language_adversarial_loss(logits: torch.Tensor, languages: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the language classifier: ``logits`` (B, L), ``languages`` (B,) class indices."""
    return F.cross_entropy(logits, languages)


class LanguageAdversary(nn.Module):
    def __init__(self, dim: int, n_languages: int, hidden: int = 256) -> None:
        super().__init__()
        self.classifier = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, n_languages))

    def forward(self, features: torch.Tensor, languages: torch.Tensor) -> torch.Tensor:
        return language_adversarial_loss(self.classifier(reverse_gradient(features)), languages)
