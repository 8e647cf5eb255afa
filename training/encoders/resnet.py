"""ResNet-152 (the papers' image encoder): 2048-d average-pooled features, from the hub or a local folder.

Uses the transformers implementation (``ResNetForImageClassification``), so it needs no torchvision.
``resnet152`` loads ``microsoft/resnet-152``; ``resnet152:<name-or-path>`` any compatible checkpoint.
Optional 10-crop averaging (4 corners + centre, and their mirror images), as in the SMALR paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from PIL import Image, ImageOps

from indexer.encoders.base import ImageEncoder
from indexer.encoders.imagenet import imagenet_class_names
from indexer.encoders.torch_utils import resize_center_crop, torch_device

DEFAULT_RESNET = "microsoft/resnet-152"
_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


class ResNetEncoder(ImageEncoder):
    def __init__(self, model: str = DEFAULT_RESNET, device: str = "cpu", ten_crop: bool = False, size: int = 224):
        super().__init__()
        self.model_name = model or DEFAULT_RESNET
        self.name = "resnet152" if self.model_name == DEFAULT_RESNET else f"resnet152:{self.model_name}"
        self.device = torch_device(device)
        self.ten_crop = ten_crop
        self.input_size = size
        self._model: Any = None
        self._labels: list[str] = []

    def _load(self) -> None:
        from transformers import ResNetForImageClassification

        model = ResNetForImageClassification.from_pretrained(self.model_name)
        self._model = model.eval().to(self.device)
        config: Any = model.config
        self.dim = int(config.hidden_sizes[-1])
        num_labels = int(config.num_labels)
        id2label = dict(config.id2label or {})
        self._labels = (
            imagenet_class_names()
            if num_labels == 1000
            else [str(id2label.get(i, f"class {i}")) for i in range(num_labels)]
        )

    def _tensor(self, image: Image.Image) -> torch.Tensor:
        array = (np.asarray(image, dtype=np.float32) / 255.0 - _MEAN) / _STD
        return torch.from_numpy(array).permute(2, 0, 1)

    def _views(self, image: Image.Image) -> list[Image.Image]:
        size = self.input_size
        if not self.ten_crop:
            return [resize_center_crop(image, size)]
        # Resize the short side to 256/224 of the crop size, then 5 crops and their mirrors.
        big = resize_center_crop(image, round(size * 256 / 224))
        w, h = big.size
        boxes = [
            (0, 0),
            (w - size, 0),
            (0, h - size),
            (w - size, h - size),
            ((w - size) // 2, (h - size) // 2),
        ]
        crops = [big.crop((x, y, x + size, y + size)) for x, y in boxes]
        return crops + [ImageOps.mirror(crop) for crop in crops]

    def prepare(self, image: Image.Image) -> Any:
        # The model-size views (1 or 10 crops): the indexer then holds these, never the decoded photo, while
        # a batch waits for the network.
        return self._views(image)

    @torch.inference_mode()
    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        return self._predict_prepared([self._views(image) for image in images])

    @torch.inference_mode()
    def _predict_prepared(self, prepared: Sequence[Any]) -> np.ndarray:
        views: Sequence[list[Image.Image]] = prepared
        per_image = len(views[0])
        batch = torch.stack([self._tensor(view) for group in views for view in group]).to(self.device)
        pooled = self._model.resnet(batch).pooler_output.flatten(1)
        return pooled.view(len(views), per_image, -1).mean(dim=1).float().cpu().numpy()

    @torch.inference_mode()
    def _classify(self, features: np.ndarray) -> np.ndarray:
        logits = self._model.classifier(torch.from_numpy(features).to(self.device))
        return logits.softmax(dim=-1).float().cpu().numpy()

    @property
    def class_names(self) -> list[str]:
        return self._labels
