"""Small helpers shared by the torch image encoders."""

from __future__ import annotations

import torch

from indexer.encoders.preprocess import resize_center_crop

__all__ = ["resize_center_crop", "torch_device"]


def torch_device(name: str) -> torch.device:
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} requested but CUDA is not available on this machine")
    return torch.device(name)
