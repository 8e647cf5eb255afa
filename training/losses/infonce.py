"""Symmetric InfoNCE (contrastive cross-entropy over the batch), the loss of CLIP and of multilingual CLIP
distillation, added as a stronger baseline than the hinge losses of the M3L line of papers.

Radford et al. 2021, "Learning Transferable Visual Models From Natural Language Supervision", Fig. 3;
van den Oord et al. 2018 (CPC)::

    L = ½ · [ CE(softmax_i(s(t, i) / τ), i⁺)  +  CE(softmax_t(s(t, i) / τ), t⁺) ]

``s`` is the cosine similarity and τ a fixed temperature (0.05). Unlike the max-violation hinge, every negative
of the batch contributes, weighted by how hard it is, which helps on small training sets where the hardest
negative is often a near-duplicate. Other rows that show the same image are masked out (never negatives).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from training.losses.mining import same_image_mask
from training.losses.options import LossOption

OPTIONS = (LossOption("temperature", 0.05, "InfoNCE temperature τ"),)


def infonce_loss(
    text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    logits = F.normalize(text, dim=1) @ F.normalize(image, dim=1).T / temperature  # logits[t, i]
    targets = torch.arange(len(text), device=text.device)
    # Other rows of the same image are not negatives: out of the softmax (the diagonal, the positive, stays).
    others = same_image_mask(image_ids) & (targets[:, None] != targets[None, :])
    logits = logits.masked_fill(others, float("-inf"))
    return 0.5 * (F.cross_entropy(logits, targets) + F.cross_entropy(logits.T, targets))


class InfoNCELoss(nn.Module):
    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError("temperature must be > 0")
        self.temperature = temperature

    def forward(self, text: torch.Tensor, image: torch.Tensor, image_ids: torch.Tensor) -> torch.Tensor:
        return infonce_loss(text, image, image_ids, temperature=self.temperature)
