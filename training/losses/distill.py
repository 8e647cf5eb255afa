"""Teacher–student distillation across languages: a caption's tower output should land where its English
teacher's does.

Reimers & Gurevych 2020, "Making Monolingual Sentence Embeddings Multilingual using Knowledge Distillation": a
student model learns ``student(t_j) ≈ teacher(s_j)`` for translations ``t_j`` of source sentences ``s_j``, by
the mean squared error over a parallel corpus. Here the teacher is the English caption's tower output (a frozen
tower, or the tower being trained with its gradient stopped) and, for captions that are not translations, the
mean teacher output of the photo's English captions: an image-space target for a photo that is not available.

* ``mse`` (their loss): ``1/B Σ_j ‖s_j − t_j‖²`` on the unit vectors (= 2 − 2 cos).
* ``infonce``: the in-batch contrastive form (:mod:`training.losses.infonce`, student → teacher direction only):
  each student must pick its own target among the batch's targets, which ties ranks rather than positions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

KINDS = ("mse", "infonce")


def distill_loss(
    student: torch.Tensor, teacher: torch.Tensor, kind: str = "mse", temperature: float = 0.05
) -> torch.Tensor:
    """``student`` (B, D) tower outputs, ``teacher`` (B, D) their targets (no gradient flows into them)."""
    student, teacher = F.normalize(student, dim=-1), F.normalize(teacher.detach(), dim=-1)
    if kind == "mse":
        return ((student - teacher) ** 2).sum(dim=-1).mean()
    if kind == "infonce":
        logits = student @ teacher.T / temperature
        return F.cross_entropy(logits, torch.arange(len(student), device=student.device))
    raise ValueError(f"unknown distillation loss {kind!r}; choose one of: {', '.join(KINDS)}")


class DistillLoss(nn.Module):
    def __init__(self, kind: str = "mse", temperature: float = 0.05) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"unknown distillation loss {kind!r}; choose one of: {', '.join(KINDS)}")
        if temperature <= 0:
            raise ValueError("temperature must be > 0")
        self.kind = kind
        self.temperature = temperature

    def forward(self, student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
        return distill_loss(student, teacher, self.kind, self.temperature)
