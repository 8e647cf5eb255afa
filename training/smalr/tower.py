"""A SMALR tower at query time: its own text model (hybrid vocabulary → GRU → FC) and the image-branch map.

The paper's Embedding Network (§3) has an image branch of two FC layers over frozen CNN features. Here the
image branch is one linear map ``P`` (joint × image-dim) with orthonormal rows (``P Pᵀ = I``), applied to the
index's own unit image vectors ``x``: the score of a sentence ``t`` is ``⟨ℓ2(t), P x⟩``. Because
``⟨ℓ2(t), P x⟩ = ⟨Pᵀ ℓ2(t), x⟩`` and ``‖Pᵀ ℓ2(t)‖ = 1``, a query is mapped once into the index space
(:meth:`embed`) and searched against the stored frozen vectors unchanged: no photo is re-embedded, no second
vector per photo is stored, and text→image and image→text rankings equal the training score exactly.

Saved as ``config.json`` (``"kind": "smalr"``) + ``model.safetensors`` + ``vocab.json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn

from indexer.tower import CONFIG_NAME, WEIGHTS_NAME, SavedTower
from indexer.unit import unit_rows
from training.smalr.gru import gru_last_hidden
from training.smalr.vocab import SmalrVocab

KIND = "smalr"
TEXT_ENCODER = "smalr"  # the tower is its own text encoder (tokenizer + vocabulary + GRU)


class SmalrTower(SavedTower):
    def __init__(
        self,
        vocab: SmalrVocab,
        output_dim: int,
        word_dim: int = 300,
        hidden_dim: int = 512,
        joint_dim: int = 512,
        image_encoder: str = "efficientnet-lite2",
        image_space: dict[str, Any] | None = None,
        method: str = "smalr",
    ) -> None:
        super().__init__()
        self.vocab = vocab
        self.config: dict[str, Any] = {
            "kind": KIND,
            "text_encoder": TEXT_ENCODER,
            "method": method,
            "output_dim": int(output_dim),
            "word_dim": int(word_dim),
            "hidden_dim": int(hidden_dim),
            "joint_dim": int(joint_dim),
            "image_encoder": image_encoder,
            "image_space": dict(image_space or {"kind": "l2"}),
            "languages": sorted(vocab.languages),
        }
        self.table = nn.Embedding(vocab.rows, word_dim, padding_idx=0)
        self.gru = nn.GRU(word_dim, hidden_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, joint_dim)
        self.projection = nn.Parameter(torch.zeros(joint_dim, output_dim))

    @property
    def text_encoder(self) -> str:
        return TEXT_ENCODER

    def _gru_weights(self) -> list[np.ndarray]:
        names = ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")
        return [getattr(self.gru, name).detach().numpy() for name in names]

    def encode(self, texts: Sequence[str], langs: Sequence[str | None]) -> np.ndarray:
        """Texts (each in its language; None: guessed from the vocabulary) → unit joint-space vectors."""
        ids, lengths = self.vocab.batch(texts, langs)
        words = self.table.weight.detach().numpy()[ids]
        hidden = gru_last_hidden(words, lengths, *self._gru_weights())
        joint = hidden @ self.fc.weight.detach().numpy().T + self.fc.bias.detach().numpy()
        return unit_rows(joint).astype(np.float32, copy=False)

    def embed(self, joint: np.ndarray) -> np.ndarray:
        """Unit joint vectors → unit query vectors in the index's image space (``Pᵀ t``)."""
        return unit_rows(np.asarray(joint, dtype=np.float32) @ self.projection.detach().numpy()).astype(np.float32)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The same text model in torch (unnormalised joint vectors); used by tests to check :meth:`encode`."""
        packed = nn.utils.rnn.pack_padded_sequence(self.table(ids), lengths, batch_first=True, enforce_sorted=False)
        _, hidden = self.gru(packed)
        return self.fc(hidden[-1])

    def parameter_count(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def save_pretrained(self, folder: Path, extra: dict[str, Any] | None = None) -> None:
        Path(folder).mkdir(parents=True, exist_ok=True)
        self.vocab.save(folder)  # before config.json: a folder with a config is a complete tower
        super().save_pretrained(folder, extra)

    @classmethod
    def from_pretrained(cls, folder: Path) -> SmalrTower:
        folder = Path(folder)
        config = json.loads((folder / CONFIG_NAME).read_text(encoding="utf-8"))
        if config.get("kind") != KIND:
            raise ValueError(f"{folder} is not a SMALR tower (config kind {config.get('kind')!r})")
        keys = ("output_dim", "word_dim", "hidden_dim", "joint_dim", "image_encoder", "image_space", "method")
        model = cls(SmalrVocab.load(folder), **{key: config[key] for key in keys})
        model.load_state_dict(load_file(str(folder / WEIGHTS_NAME)))
        return model.eval()
