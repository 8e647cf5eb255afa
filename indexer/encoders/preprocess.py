"""Image preprocessing without torch (PIL + numpy), shared by the PyTorch and ONNX Runtime backends."""

from __future__ import annotations

import numpy as np
from PIL import Image


def resize_center_crop(image: Image.Image, size: int) -> Image.Image:
    """Resize the short side to ``size`` (bicubic) and cut the central ``size`` x ``size`` square."""
    width, height = image.size
    scale = size / min(width, height)
    new_w, new_h = max(size, round(width * scale)), max(size, round(height * scale))
    image = image.resize((new_w, new_h), Image.Resampling.BICUBIC)
    left, top = (new_w - size) // 2, (new_h - size) // 2
    return image.crop((left, top, left + size, top + size))


def efficientnet_lite_pixels(image: Image.Image, size: int) -> np.ndarray:
    """TF EfficientNet-Lite preprocessing: (x - 127) / 128 on a bicubic resize + centre crop; (3, size, size)."""
    array = np.asarray(resize_center_crop(image, size), dtype=np.float32)
    return ((array - 127.0) / 128.0).transpose(2, 0, 1)
