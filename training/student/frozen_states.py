"""The frozen lower layers' output, computed once per training text.

A deep student whose first ``layers`` layers stay as pretrained gets the same hidden states for a text at every
step: the word embeddings are a frozen table and those layers never change. So they run once per distinct text
(when it is first drawn) and their output is kept, in float16, beside the run; a step then costs only the trained
layers. Measured on this 2-core machine (docs/model-card.md): ~2x the steps per second of running the frozen layers
every step with 9 of 12 layers frozen, once most drawn texts have been seen.

float16 storage: the states are LayerNorm outputs of magnitude ~1–10; rounding to 11 significant bits changes the
student's unit vectors by < 1e-3 (tests/training/test_student_words.py), far below a training step's change.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from indexer.export.e5 import E5Encoder


class FrozenStates:
    """``states(texts)`` → (hidden (B, T, H) float32, mask (B, T)) after ``layers`` frozen layers of ``trunk``."""

    def __init__(self, trunk: E5Encoder, batcher: object, layers: int, chunk: int = 64) -> None:
        self.trunk = trunk
        self.batcher = batcher  # training.student.train.Batcher: texts → (word embeddings, mask)
        self.layers = layers
        self.chunk = chunk
        self._states: dict[str, torch.Tensor] = {}
        self.computed = 0  # texts run through the frozen layers (the rest came from the store)

    def __len__(self) -> int:
        return len(self._states)

    def nbytes(self) -> int:
        return sum(state.numel() * state.element_size() for state in self._states.values())

    def _compute(self, texts: Sequence[str]) -> None:
        ids = self.batcher.ids  # type: ignore[attr-defined]
        order = sorted(texts, key=lambda text: len(ids(text)))  # similar lengths together: little padding
        with torch.no_grad():
            for start in range(0, len(order), self.chunk):
                part = order[start : start + self.chunk]
                embeddings, mask = self.batcher(part)  # type: ignore[operator]
                hidden = self.trunk.lower(embeddings, mask, self.layers)
                lengths = mask.sum(dim=1).long().tolist()
                for row, (text, length) in enumerate(zip(part, lengths, strict=True)):
                    self._states[text] = hidden[row, :length].to(torch.float16).cpu().clone()
        self.computed += len(texts)

    def __call__(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._states]
        if missing:
            self._compute(missing)
        rows = [self._states[text] for text in texts]
        longest = max(len(row) for row in rows)
        hidden = torch.zeros(len(rows), longest, rows[0].shape[1], dtype=torch.float32)
        mask = np.zeros((len(rows), longest), dtype=np.float32)
        for index, row in enumerate(rows):
            hidden[index, : len(row)] = row.float()
            mask[index, : len(row)] = 1.0
        device = self.batcher.device  # type: ignore[attr-defined]
        return hidden.to(device), torch.from_numpy(mask).to(device)
