"""The concept term for a tower (``polyglot train tower --concept-weight``): the English class names of the image
encoder's classifier (ImageNet's) land on its own class prototypes, as in the student's recipe (:mod:`training.losses.concept`).

The names are embedded once by the tower's frozen sentence encoder (through the features cache); each step adds
``per_step`` of them, drawn at random, to the loss. Phrasing: the bare name only, what people type (the student
uses four phrasings; one keeps it to 1,000 texts for an encoder that costs ~50–100 ms a sentence on CPU).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.tower import TextTower
from training.data.features import text_embeddings
from training.losses.concept import ConceptLoss, class_prototypes
from training.tower.space import tower_outputs

TOWER_CONCEPT_TEMPLATES = ("{}",)


@dataclass(frozen=True)
class ConceptOptions:
    weight: float = 0.5  # the student's weight for this term
    per_step: int = 32
    temperature: float = 0.05


class ConceptSet:
    def __init__(
        self,
        options: ConceptOptions,
        text_encoder: TextEncoder,
        image_encoder: ImageEncoder,
        cache_dir: Path,
        space_kind: str,
        seed: int = 0,
    ) -> None:
        names = image_encoder.class_names  # index-aligned with its classifier (ImageNet's 1,000 for the CNNs)
        texts = [template.format(name) for name in names for template in TOWER_CONCEPT_TEMPLATES]
        self.labels = torch.from_numpy(np.repeat(np.arange(len(names)), len(TOWER_CONCEPT_TEMPLATES)))
        self.sentences = torch.from_numpy(text_embeddings(text_encoder, texts, cache_dir, desc="class names"))
        image_encoder.load()  # its classifier head gives the prototypes
        self.loss = ConceptLoss(torch.from_numpy(class_prototypes(image_encoder)), options.temperature)
        self.options = options
        self.space_kind = space_kind
        self.rng = np.random.default_rng(seed)

    def batch_loss(self, tower: TextTower) -> torch.Tensor:
        size = min(self.options.per_step, len(self.labels))
        rows = torch.from_numpy(self.rng.choice(len(self.labels), size=size, replace=False))
        outputs = tower_outputs(self.space_kind, tower(self.sentences[rows]))
        return self.options.weight * self.loss(outputs, self.labels[rows])

    def summary(self) -> dict[str, object]:
        return {
            "texts": len(self.labels),
            "templates": list(TOWER_CONCEPT_TEMPLATES),
            "weight": self.options.weight,
            "per_step": self.options.per_step,
            "temperature": self.options.temperature,
        }
