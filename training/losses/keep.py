"""Keeping the languages the student does not train on: stay close to the frozen encoder's representation.

multilingual-e5-small was pretrained on ~100 languages; the student trains on ten. Fine-tuning drifts the shared
layers towards those ten, and a language that is never seen can fall out of the aligned space (catastrophic
forgetting). The term anchors the trunk's pooled sentence vector to the frozen trunk's on the same texts — the
"stay close to the original model on multilingual text" regulariser of Reimers & Gurevych 2020 (§4, the
student initialised from and kept near the multilingual teacher), in its feature-matching form (Li & Hoiem
2016, *Learning without Forgetting*)::

    L = 1/B Σ_i ‖ u(h_i) − u(h⁰_i) ‖²      u(x) = x / ‖x‖

``h`` the student trunk's mean-pooled output, ``h⁰`` the frozen initial trunk's. Only directions are matched:
the head after the trunk reads directions, and a global scale change is harmless.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def keep_loss(student: torch.Tensor, frozen: torch.Tensor) -> torch.Tensor:
    """``student`` (B, H) pooled trunk outputs, ``frozen`` (B, H) the initial trunk's on the same texts."""
    return ((F.normalize(student, dim=-1) - F.normalize(frozen.detach(), dim=-1)) ** 2).sum(dim=-1).mean()


class KeepLoss(nn.Module):
    def forward(self, student: torch.Tensor, frozen: torch.Tensor) -> torch.Tensor:
        return keep_loss(student, frozen)
