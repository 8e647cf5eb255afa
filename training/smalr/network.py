"""The trainable SMALR model: hybrid embedding (HEM) → GRU → FC, the image-branch map, and the loss heads.

Language side (§3.1, MULE's language branch): language-specific words embed as FC(their 50-d features), the
features themselves fine-tuned; rare words take their frozen latent token's embedding (fine-tuned); each language
has one unknown-word row, and MCLM has a MASK row. The universal embedding of a sentence is the average of its
word embeddings; the sentence representation is the GRU's last hidden state through a FC layer.

Image side: one linear map with orthonormal rows on the index's unit image vectors, so the trained model serves
against the frozen index (see :mod:`training.smalr.tower`); :meth:`SmalrNetwork.export` writes that tower.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from training.losses.adversarial import LanguageAdversary
from training.losses.mclm import MCLMHead
from training.smalr.tower import SmalrTower
from training.smalr.vocab import PAD, SmalrVocab


class SmalrNetwork(nn.Module):
    def __init__(
        self,
        vocab: SmalrVocab,
        specific_features: torch.Tensor,
        latent: torch.Tensor,
        project: nn.Linear,
        image_dim: int,
        hidden_dim: int,
        joint_dim: int,
    ) -> None:
        super().__init__()
        self.vocab = vocab
        word_dim = project.out_features
        self.specific_features = nn.Parameter(specific_features.clone())
        self.project = project
        self.latent = nn.Parameter(latent.clone())
        self.unk = nn.Parameter(torch.randn(len(vocab.languages), word_dim) * 0.1)
        self.mask_row = nn.Parameter(torch.randn(1, word_dim) * 0.1)
        self.gru = nn.GRU(word_dim, hidden_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, joint_dim)
        self.image_map = nn.Linear(image_dim, joint_dim, bias=False)
        nn.init.orthogonal_(self.image_map.weight)  # rows orthonormal; kept so by retract() after each step
        self.mclm_universal = MCLMHead(word_dim)
        self.mclm_sentence = MCLMHead(joint_dim)
        self.adversary = LanguageAdversary(word_dim, len(vocab.languages))

    @property
    def mask_id(self) -> int:
        return self.vocab.rows  # one past the rows the served tower keeps

    def table(self) -> torch.Tensor:
        """Every row of the vocabulary (layout of :class:`SmalrVocab`) plus the MASK row."""
        pad = torch.zeros(1, self.unk.shape[1])
        specific = self.project(self.specific_features)
        return torch.cat([pad, self.unk, specific, self.latent, self.mask_row])

    def universal(self, words: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Average word embedding over real, unmasked tokens (the HEM output as a sentence vector)."""
        keep = ((ids != PAD) & (ids != self.mask_id)).float()[..., None]
        return (words * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)

    def sentence(self, words: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        packed = nn.utils.rnn.pack_padded_sequence(words, lengths, batch_first=True, enforce_sorted=False)
        _, hidden = self.gru(packed)
        out: torch.Tensor = self.fc(hidden[-1])
        return out

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(universal embedding, unnormalised sentence vector) of padded row ids."""
        words = self.table()[ids]
        return self.universal(words, ids), self.sentence(words, lengths)

    def images(self, vectors: torch.Tensor) -> torch.Tensor:
        """Unit image vectors → joint space (norm ≤ 1: the rows of the map are orthonormal)."""
        out: torch.Tensor = self.image_map(vectors)
        return out

    @torch.no_grad()
    def retract(self, iterations: int = 2) -> None:
        """Pull the image map back to orthonormal rows after an optimiser step: Newton–Schulz iterations
        ``W ← 1.5 W − 0.5 W Wᵀ W`` (a few matrix products; torch's orthogonal parametrisation cost seconds per
        step for a 512 × 1280 map on one core)."""
        weight = self.image_map.weight
        for _ in range(iterations):
            weight.copy_(1.5 * weight - 0.5 * (weight @ weight.T) @ weight)

    @torch.no_grad()
    def orthonormalize(self) -> None:
        """Exactly orthonormal rows (the nearest such matrix, by SVD): before export."""
        u, _, vt = torch.linalg.svd(self.image_map.weight, full_matrices=False)
        self.image_map.weight.copy_(u @ vt)

    def query_vectors(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """What the served tower computes: ``Pᵀ ℓ2(sentence)`` in the index's image space (unit)."""
        _, sentence = self.encode(ids, lengths)
        return F.normalize(sentence, dim=-1) @ self.image_map.weight

    def export(self, image_encoder: str, image_space: dict[str, object], method: str) -> SmalrTower:
        self.orthonormalize()
        word_dim, hidden = self.unk.shape[1], self.gru.hidden_size
        tower = SmalrTower(
            self.vocab,
            self.image_map.weight.shape[1],
            word_dim,
            hidden,
            self.fc.out_features,
            image_encoder,
            dict(image_space),
            method,
        )
        with torch.no_grad():
            tower.table.weight.copy_(self.table()[: self.vocab.rows])
            tower.gru.load_state_dict(self.gru.state_dict())
            tower.fc.load_state_dict(self.fc.state_dict())
            tower.projection.copy_(self.image_map.weight)
        return tower.eval()

    def trainable_parameters(self, with_mclm: bool) -> int:
        """Parameters the method trains (LA and HEM leave the MCLM heads out)."""
        unused = set() if with_mclm else {*self.mclm_universal.parameters(), *self.mclm_sentence.parameters()}
        return sum(p.numel() for p in self.parameters() if p.requires_grad and p not in unused)
