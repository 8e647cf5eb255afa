"""Metric-learning losses for the text tower: M3L (the paper's), PATR (its baseline), the VSE hinge and InfoNCE.

Every loss takes the same batch: tower outputs ``text`` (B, D), their positive image vectors ``image`` (B, D)
(row ``k`` of ``text`` describes row ``k`` of ``image``) and ``image_ids`` (B,), so that two rows showing the
same image are never mined as negatives of each other.
"""

from __future__ import annotations

from typing import Any

from torch import nn

from training.losses import infonce, m3l, patr, vse
from training.losses.infonce import InfoNCELoss, infonce_loss
from training.losses.m3l import M3LLoss, m3l_loss
from training.losses.options import LossOption, unknown_options
from training.losses.patr import PATRLoss, patr_loss
from training.losses.vse import VSELoss, vse_loss

# The tower losses, in the order the command line lists them: each with the options its module declares.
TOWER_LOSSES: dict[str, tuple[type[nn.Module], tuple[LossOption, ...]]] = {
    "m3l": (M3LLoss, m3l.OPTIONS),
    "patr": (PATRLoss, patr.OPTIONS),
    "vse": (VSELoss, vse.OPTIONS),
    "infonce": (InfoNCELoss, infonce.OPTIONS),
}
LOSSES: dict[str, type[nn.Module]] = {name: loss for name, (loss, _) in TOWER_LOSSES.items()}


def create_loss(name: str, **options: Any) -> nn.Module:
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; choose one of: {', '.join(LOSSES)}") from None
    return cls(**options)


def loss_options() -> dict[str, LossOption]:
    """Every option some tower loss declares, by name (the command line's generated options)."""
    return {option.name: option for _, declared in TOWER_LOSSES.values() for option in declared}


def check_loss_options(name: str, given: dict[str, Any]) -> dict[str, Any]:
    """The options given (not None) for loss ``name``; a ValueError names the loss unknown or the options it
    does not take."""
    if name not in TOWER_LOSSES:
        raise ValueError(f"unknown loss {name!r}; choose one of: {', '.join(TOWER_LOSSES)}")
    wrong = unknown_options(name, TOWER_LOSSES[name][1], given)
    if wrong:
        raise ValueError(f"{', '.join(wrong)} do not apply to --loss {name}")
    return {key: value for key, value in given.items() if value is not None}


__all__ = [
    "LOSSES",
    "TOWER_LOSSES",
    "InfoNCELoss",
    "LossOption",
    "M3LLoss",
    "PATRLoss",
    "VSELoss",
    "check_loss_options",
    "create_loss",
    "infonce_loss",
    "loss_options",
    "m3l_loss",
    "patr_loss",
    "vse_loss",
]
