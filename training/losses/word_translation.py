"""Word translation: a word's translation must land where the teacher puts the English word, every language
weighted evenly.

Reimers & Gurevych 2020 ("Making Monolingual Sentence Embeddings Multilingual using Knowledge Distillation")
applied to the words of bilingual dictionaries: ``student(t) ≈ teacher(e)`` for a translation ``t`` of the English
word ``e`` (and ``student(e) ≈ teacher(e)``), by the squared distance of unit vectors. A batch mixes ~40
languages whose dictionaries differ in size by 5x; the mean is taken per language first, then over the batch's
languages, so a language with a small dictionary pulls as hard as German::

    L = 1/|L| Σ_l  1/|B_l| Σ_{i ∈ B_l} ‖ u(s_i) − u(t_i) ‖²      u(x) = x / ‖x‖
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def word_translation_loss(student: torch.Tensor, teacher: torch.Tensor, language: torch.Tensor) -> torch.Tensor:
    """``student`` (B, D) outputs for words, ``teacher`` (B, D) the English words' targets (no gradient flows into
    them), ``language`` (B,) an integer code of each word's language."""
    distance = ((F.normalize(student, dim=-1) - F.normalize(teacher.detach(), dim=-1)) ** 2).sum(dim=-1)
    codes, group = torch.unique(language, return_inverse=True)
    per_language = torch.zeros(len(codes), dtype=distance.dtype, device=distance.device)
    per_language.index_add_(0, group, distance)
    counts = torch.bincount(group, minlength=len(codes)).to(distance.dtype)
    return (per_language / counts).mean()


class WordTranslationLoss(nn.Module):
    def forward(self, student: torch.Tensor, teacher: torch.Tensor, language: torch.Tensor) -> torch.Tensor:
        return word_translation_loss(student, teacher, language)
