"""In-batch hard-negative mining shared by the distance losses.

Online negative sampling as in Aggarwal et al. 2019 ("Multitask Text-to-Visual Embedding with Titles and
Clickthrough Data", ref. [2] of the M3L paper): for every anchor text, the hardest negative is the *closest*
image of the mini-batch that is not its own image.
"""

from __future__ import annotations

import torch


def squared_distances(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``d[i, j] = ||a_i - b_j||²`` (B, B), clamped at 0 against rounding."""
    return (a.pow(2).sum(1, keepdim=True) - 2 * a @ b.T + b.pow(2).sum(1)[None, :]).clamp_min(0)


def same_image_mask(image_ids: torch.Tensor) -> torch.Tensor:
    """``mask[i, j]`` is True when rows i and j show the same image (the diagonal included)."""
    return image_ids[:, None] == image_ids[None, :]


def hardest_negative(distances: torch.Tensor, image_ids: torch.Tensor) -> torch.Tensor:
    """Column index of the closest other-image entry of each row of ``distances`` (B, B)."""
    masked = distances.detach().masked_fill(same_image_mask(image_ids), float("inf"))
    if torch.isinf(masked).all(dim=1).any():
        raise ValueError("hard-negative mining needs at least two different images in the batch")
    return masked.argmin(dim=1)
