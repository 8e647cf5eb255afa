"""Concepts: a class name must land where the image encoder's own classifier puts that class.

The M-CLIP / LiT idea turned around: instead of aligning text to a frozen image tower's *captions*, a class name
("goldfish", "a photo of a goldfish") is aligned to its class prototype ``p_c`` — the classifier's weight row
for ``c`` (minus the mean row) as a direction of the image space (:func:`class_prototypes`)
— by a softmax over all classes (the zero-shot classification objective of Radford et al. 2021, §3.1.2, with
the roles of text and class weights exchanged)::

    L = CE( softmax_c( cos(s_i, p_c) / τ ), y_i )

Every class is a negative of every name, so names of similar things ("tabby" / "tiger cat") are pushed to their
own prototype, not merely towards the animal region.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from indexer.encoders.base import ImageEncoder
from indexer.unit import unit_rows


def class_prototypes(image_encoder: ImageEncoder) -> np.ndarray:
    """Where the classifier puts each class in the image space: the unit direction of its weight row minus the
    mean row. Against unit image vectors this ranks photos by that class's logit relative to the average class
    (the softmax's own comparison), measured as the concept term's ceiling in docs/model-card.md. The same for
    ``l2`` and ``center-l2`` spaces: a mean shift of the features does not turn a direction."""
    weight, _bias = image_encoder.classifier_head()  # (dim, classes)
    directions = weight.T - weight.T.mean(axis=0, keepdims=True)
    return unit_rows(directions).astype(np.float32)


def concept_loss(
    text: torch.Tensor, labels: torch.Tensor, prototypes: torch.Tensor, temperature: float = 0.05
) -> torch.Tensor:
    """``text`` (B, D) student outputs for class names, ``labels`` (B,) their classes, ``prototypes`` (C, D)."""
    logits = F.normalize(text, dim=-1) @ F.normalize(prototypes.detach(), dim=-1).T / temperature
    return F.cross_entropy(logits, labels)


class ConceptLoss(nn.Module):
    prototypes: torch.Tensor  # a buffer (moves with the module, not trained)

    def __init__(self, prototypes: torch.Tensor, temperature: float = 0.05) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError("temperature must be > 0")
        self.register_buffer("prototypes", prototypes)
        self.temperature = temperature

    def forward(self, text: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return concept_loss(text, labels, self.prototypes, self.temperature)
