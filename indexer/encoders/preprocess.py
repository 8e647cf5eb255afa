"""Image preprocessing without torch (PIL + numpy), shared by the PyTorch and ONNX Runtime backends."""

from __future__ import annotations

import numpy as np
from PIL import Image


def resize_center_crop(image: Image.Image, size: int) -> Image.Image:
    """Resize the short side to ``size`` (bicubic) and cut the central ``size`` x ``size`` square.

    Only the central square is resampled (Pillow's ``box``): the pixels of resizing the whole image and cropping
    it (up to the float32 rounding of the box: a grey level here and there), without ever allocating the resized
    whole. Memory is about ``4 × size × short side`` bytes whatever the shape; resizing a 1×100,000 image
    whole asked for 27 GB.
    """
    width, height = image.size
    scale = size / min(width, height)
    new_w, new_h = max(size, round(width * scale)), max(size, round(height * scale))
    left, top = (new_w - size) // 2, (new_h - size) // 2
    # The square in source coordinates: output pixel x samples the source at (left + x + 0.5) * width / new_w,
    # exactly where the resized whole would have sampled it.
    sx, sy = width / new_w, height / new_h
    box = (left * sx, top * sy, (left + size) * sx, (top + size) * sy)
    return image.resize((size, size), Image.Resampling.BICUBIC, box=box)


def efficientnet_lite_pixels(image: Image.Image, size: int) -> np.ndarray:
    """TF EfficientNet-Lite preprocessing: (x - 127) / 128 on a bicubic resize + centre crop; (3, size, size)."""
    array = np.asarray(resize_center_crop(image, size), dtype=np.float32)
    return ((array - 127.0) / 128.0).transpose(2, 0, 1)
