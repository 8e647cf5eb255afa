"""Small helpers shared by the torch image encoders."""

from __future__ import annotations

import torch
from PIL import Image


def torch_device(name: str) -> torch.device:
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} requested but CUDA is not available on this machine")
    return torch.device(name)


def resize_center_crop(image: Image.Image, size: int) -> Image.Image:
    """Resize the short side to ``size`` (bicubic) and cut the central ``size`` x ``size`` square."""
    width, height = image.size
    scale = size / min(width, height)
    new_w, new_h = max(size, round(width * scale)), max(size, round(height * scale))
    image = image.resize((new_w, new_h), Image.Resampling.BICUBIC)
    left, top = (new_w - size) // 2, (new_h - size) // 2
    return image.crop((left, top, left + size, top + size))
