"""Caption–caption (c2c) alignment: two captions of the same image, in two languages, should land together.

Kádár et al. 2018, "Bootstrapping Disjoint Datasets for Multilingual Multimodal Representation Learning", §3:
besides the caption–image ranking loss, a ranking loss between captions of the same image in different languages
(their "c2c" objective) ties the languages to each other and not only to the images; SMALR's language-agnostic
alignment (LA) plays the same role. Written here in the contrastive form of :mod:`training.losses.infonce`::

    L_c2c = ½ · [ CE(softmax_b(s(a, b) / τ), b⁺)  +  CE(softmax_a(s(a, b) / τ), a⁺) ]

Row ``k`` of ``first`` and of ``second`` are captions of image ``k`` (in different languages); every other row of
the batch is a negative.
"""

from __future__ import annotations

import torch
from torch import nn

from training.losses.infonce import infonce_loss


def c2c_loss(first: torch.Tensor, second: torch.Tensor, temperature: float = 0.05) -> torch.Tensor:
    # Symmetric InfoNCE between the two sides, every row its own image: no row masked out.
    return infonce_loss(first, second, torch.arange(len(first), device=first.device), temperature)


class CaptionCaptionLoss(nn.Module):
    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError("temperature must be > 0")
        self.temperature = temperature

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return c2c_loss(first, second, temperature=self.temperature)
