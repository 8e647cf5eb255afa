"""Metric-learning losses for the text tower: M3L (the paper's), PATR (its baseline), the VSE hinge and InfoNCE.

Every loss takes the same batch: tower outputs ``text`` (B, D), their positive image vectors ``image`` (B, D)
(row ``k`` of ``text`` describes row ``k`` of ``image``) and ``image_ids`` (B,), so that two rows showing the
same image are never mined as negatives of each other.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from training.losses.infonce import InfoNCELoss, infonce_loss
from training.losses.m3l import M3LLoss, m3l_loss
from training.losses.patr import PATRLoss, patr_loss
from training.losses.vse import VSELoss, vse_loss

LOSSES: dict[str, type[nn.Module]] = {"m3l": M3LLoss, "patr": PATRLoss, "vse": VSELoss, "infonce": InfoNCELoss}


def create_loss(name: str, **options: Any) -> nn.Module:
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; choose one of: {', '.join(LOSSES)}") from None
    return cls(**options)


__all__ = [
    "LOSSES",
    "InfoNCELoss",
    "M3LLoss",
    "PATRLoss",
    "VSELoss",
    "create_loss",
    "infonce_loss",
    "m3l_loss",
    "patr_loss",
    "vse_loss",
]
