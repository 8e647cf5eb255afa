"""Distillation on parallel and same-photo text (``polyglot train tower --text-corpus DIR --distill …``).

Next to every image–caption batch, a batch of *student* captions from text-only corpora (``../shared/data/
m30k-text``, ``../shared/data/more-langs/text-captions.jsonl``; :mod:`training.data.text_corpus`) is pulled towards
its English teacher's tower output (:mod:`training.losses.distill`). The teacher is either a frozen tower on the
same text encoder and image space (``--distill PATH``, e.g. the shipped one: targets computed once) or the
tower being trained, gradient stopped, in eval mode (``--distill self``: targets follow the tower).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from indexer.encoders.base import TextEncoder
from indexer.image_space import ImageSpace
from indexer.tower import TextTower
from training.bridge import LanguageBridge
from training.data.features import text_embeddings
from training.data.text_corpus import distill_pairs, read_corpus
from training.losses.distill import DistillLoss
from training.tower.space import tower_outputs


@dataclass
class DistillOptions:
    corpus: list[Path] = field(default_factory=list)
    teacher: str = "self"  # "self", or a tower folder
    weight: float = 1.0
    target: str = "caption"  # "caption": a translation learns from its original; "photo": from the photo's English
    loss: str = "mse"
    temperature: float = 0.05
    sources: list[str] | None = None  # keep only these corpus sources (e.g. multi30k-task1)
    langs: list[str] | None = None  # student languages (None: every non-English language of the corpus)
    per_group: int | None = 2  # captions kept per (photo, language, source)
    batch_size: int = 128


def segment_mean(values: torch.Tensor, segment: np.ndarray, count: int) -> torch.Tensor:
    """Mean of ``values`` rows per segment id (0..count-1)."""
    index = torch.from_numpy(segment)
    sums = torch.zeros(count, values.shape[1], dtype=values.dtype).index_add_(0, index, values)
    sizes = torch.bincount(index, minlength=count).clamp_min(1).to(values.dtype)
    return sums / sizes[:, None]


class DistillSet:
    def __init__(
        self,
        options: DistillOptions,
        text_encoder: TextEncoder,
        cache_dir: Path,
        space_kind: str,
        space: ImageSpace,
        bridge: LanguageBridge | None = None,
        seed: int = 0,
    ) -> None:
        captions = read_corpus(options.corpus, options.langs, options.sources, options.per_group)
        self.pairs = distill_pairs(captions, options.target, options.langs or ())
        embeddings = text_embeddings(text_encoder, self.pairs.texts, cache_dir, desc="text corpus")
        if bridge is not None:  # bridged languages are learnt as they are queried
            embeddings = bridge.apply(embeddings, self.pairs.langs.tolist())
        self.embeddings = torch.from_numpy(np.ascontiguousarray(embeddings, dtype=np.float32))
        self.options = options
        self.space_kind = space_kind
        self.loss_fn = DistillLoss(options.loss, options.temperature)
        self.rng = np.random.default_rng(seed + 1)
        self.order = self.rng.permutation(len(self.pairs))
        self.position = 0
        self.fixed: torch.Tensor | None = None
        if options.teacher != "self":
            self.fixed = self._frozen_targets(Path(options.teacher), text_encoder.name, space)

    def _frozen_targets(self, folder: Path, encoder: str, space: ImageSpace) -> torch.Tensor:
        teacher = TextTower.from_pretrained(folder)
        if teacher.text_encoder != encoder:
            raise ValueError(
                f"the teacher tower {folder} reads {teacher.text_encoder!r}, the student {encoder!r}: distil from a "
                "tower on the same text encoder, or use --distill self"
            )
        if teacher.image_space.fingerprint != space.fingerprint:
            raise ValueError(
                f"the teacher tower {folder} maps into another image space: train with --image-space-from it"
            )
        students = np.arange(len(self.pairs))
        rows, segment = self.pairs.teachers_of(students)
        outputs = torch.from_numpy(teacher.embed(self.embeddings[rows].numpy()))
        return segment_mean(outputs, segment, len(students))

    def next_students(self) -> np.ndarray:
        size = min(self.options.batch_size, len(self.pairs))
        if self.position + size > len(self.order):
            self.order, self.position = self.rng.permutation(len(self.pairs)), 0
        chosen = self.order[self.position : self.position + size]
        self.position += size
        return chosen

    def batch_loss(self, tower: TextTower) -> torch.Tensor:
        """The weighted distillation loss of one batch of students (the caller adds it to the image loss)."""
        students = self.next_students()
        out = tower_outputs(self.space_kind, tower(self.embeddings[self.pairs.student_rows[students]]))
        if self.fixed is not None:
            target = self.fixed[students]
        else:
            rows, segment = self.pairs.teachers_of(students)
            tower.eval()
            with torch.no_grad():
                target = segment_mean(
                    tower_outputs(self.space_kind, tower(self.embeddings[rows])), segment, len(students)
                )
            tower.train()
        return self.options.weight * self.loss_fn(out, target)

    def summary(self) -> dict[str, Any]:
        """What was learnt from, for the model card: students per language and source."""
        students = Counter(
            f"{lang}/{source}"
            for lang, source in zip(
                self.pairs.langs[self.pairs.student_rows].tolist(), self.pairs.student_source.tolist(), strict=True
            )
        )
        return {"students": dict(sorted(students.items())), "teacher_captions": int((self.pairs.langs == "en").sum())}
