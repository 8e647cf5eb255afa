"""Padded id batches and MCLM's word masking."""

from __future__ import annotations

import numpy as np
import torch

from training.smalr.vocab import PAD


def padded(ids: np.ndarray, lengths: np.ndarray, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' ids cut to their longest caption, and their lengths."""
    chosen = lengths[rows]
    return torch.from_numpy(ids[rows, : int(chosen.max())]), torch.from_numpy(chosen)


def mask_words(ids: torch.Tensor, lengths: torch.Tensor, rate: float, mask_id: int) -> torch.Tensor:
    """Replace each real token by ``mask_id`` with probability ``rate`` (SMALR: 20 %), keeping at least one
    unmasked token per sentence so its average embedding stays defined."""
    real = ids != PAD
    masked = (torch.rand(ids.shape) < rate) & real
    everything = masked.sum(dim=1) == lengths
    if everything.any():  # unmask the first token of fully masked sentences
        masked[everything, 0] = False
    return torch.where(masked, torch.full_like(ids, mask_id), ids)
