"""Pretraining of the latent vocabulary: which shared token each rare word maps to (SMALR §3.1).

A hard attention over the latent tokens is predicted from each rare word's features (scores against one
learned key per token, see :class:`_Pretrainer`); the word takes the best-scoring token's embedding, or with probability p = 0.2
a token drawn uniformly from the top M = 20 (exploration). Language-specific words embed as FC(features).
A sentence is the average of its word embeddings; sentences of the same image (in any two languages) are pulled
together by the triplet loss of Eq. (1) (cosine, m = 0.05, top-10 most violated). The hard choice passes
gradients to the attention by the straight-through estimator. Afterwards each rare word's best token is frozen
and tokens no word uses are dropped; the token embeddings and the FC initialise the full model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from training.data.sampler import DistinctImageBatches
from training.losses.neighbourhood import neighbourhood_loss
from training.smalr.vocabulary import compact_assignment


@dataclass
class LatentVocabulary:
    assignment: np.ndarray  # (n_rare,) compact latent id of each rare word
    latent: torch.Tensor  # (n_used, word_dim) embeddings of the latent tokens kept
    project: nn.Linear  # features → word embedding, for the language-specific words
    history: list[float]


class _Pretrainer(nn.Module):
    """The attention scores a word's features against one key per latent token (cosine / τ). Keys start at the
    features of randomly drawn rare words and each token's embedding at FC(its key): the first assignment is
    a spherical clustering of the words. (A plain FC layer with random init sent all 32k words of the train
    vocabulary to 85 of 8,000 tokens: the argmax favours the few largest rows, and only chosen tokens learn.)"""

    def __init__(self, features: torch.Tensor, n_specific: int, n_latent: int, word_dim: int, seed: int) -> None:
        super().__init__()
        self.features = F.normalize(features, dim=-1)  # fixed during pretraining
        self.n_specific = n_specific
        self.project = nn.Linear(features.shape[1], word_dim)
        rare = self.features[n_specific:]
        generator = torch.Generator().manual_seed(seed)
        keys = rare[torch.randint(len(rare), (n_latent,), generator=generator)] if len(rare) else None
        self.keys = nn.Parameter(keys.clone() if keys is not None else torch.randn(n_latent, features.shape[1]))
        with torch.no_grad():
            self.latent = nn.Parameter(self.project(self.keys).detach().clone())
        self.temperature = 0.05

    def attention(self, features: torch.Tensor) -> torch.Tensor:
        return features @ F.normalize(self.keys, dim=-1).T / self.temperature

    def word_embeddings(self, words: torch.Tensor, explore_p: float, explore_m: int) -> torch.Tensor:
        out = torch.empty(len(words), self.latent.shape[1])
        specific = words < self.n_specific
        if specific.any():
            out[specific] = self.project(self.features[words[specific]])
        rare = ~specific
        if rare.any():
            unique, inverse = words[rare].unique(return_inverse=True)  # each rare word of the batch once
            top = self.attention(self.features[unique]).topk(min(explore_m, self.latent.shape[0]), dim=1)
            pick = torch.zeros(len(unique), dtype=torch.long)  # the best token, or with p a random one of the top M
            explore = torch.rand(len(unique)) < explore_p
            pick[explore] = torch.randint(top.indices.shape[1], (int(explore.sum()),))
            candidates = self.latent[top.indices]  # (U, M, D)
            hard = candidates[torch.arange(len(unique)), pick]
            # straight-through: the value of the hard choice, the gradient of the attention's softmax over the top
            # M tokens (a softmax over all tokens cost seconds per step on one core, for the same argmax)
            soft = (top.values.softmax(dim=1)[..., None] * candidates).sum(dim=1)
            out[rare] = (hard + soft - soft.detach())[inverse]
        return out

    def sentences(self, captions: list[np.ndarray], explore_p: float, explore_m: int) -> torch.Tensor:
        words = torch.from_numpy(np.concatenate(captions))
        owner = torch.from_numpy(np.repeat(np.arange(len(captions)), [len(c) for c in captions]))
        embedded = self.word_embeddings(words, explore_p, explore_m)
        sums = torch.zeros(len(captions), embedded.shape[1]).index_add(0, owner, embedded)
        counts = torch.tensor([max(len(c), 1) for c in captions], dtype=torch.float32)[:, None]
        return F.normalize(sums / counts, dim=-1)


def pretrain_latent(
    features: np.ndarray,
    n_specific: int,
    caption_words: list[np.ndarray],
    caption_image: np.ndarray,
    caption_lang: np.ndarray,
    n_latent: int,
    word_dim: int,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    explore_p: float = 0.2,
    explore_m: int = 20,
    top_n: int = 10,
) -> LatentVocabulary:
    torch.manual_seed(seed)
    model = _Pretrainer(torch.from_numpy(features), n_specific, n_latent, word_dim, seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    has_words = np.array([len(c) > 0 for c in caption_words])
    rows_kept = np.flatnonzero(has_words)
    batches = DistinctImageBatches(caption_image[rows_kept], caption_lang[rows_kept], batch_size, seed, partners=True)
    history = []
    for epoch in range(1, epochs + 1):
        losses = []
        for rows, _, partners in tqdm(batches, desc=f"latent pretraining {epoch}/{epochs}", leave=False):
            assert partners is not None
            paired = partners >= 0
            if paired.sum() < 2:
                continue
            first = [caption_words[i] for i in rows_kept[rows[paired]]]
            second = [caption_words[i] for i in rows_kept[partners[paired]]]
            both = model.sentences(first + second, explore_p, explore_m)
            loss = neighbourhood_loss(both[: len(first)], both[len(first) :], top_n=top_n)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        history.append(float(np.mean(losses)) if losses else 0.0)
        tqdm.write(f"latent pretraining epoch {epoch}: loss {history[-1]:.4f}")
    with torch.no_grad():
        rare_features = model.features[n_specific:]
        choice = model.attention(rare_features).argmax(dim=1).numpy() if len(rare_features) else np.zeros(0, int)
    used, assignment = compact_assignment(choice)
    return LatentVocabulary(assignment, model.latent.detach()[torch.from_numpy(used)].clone(), model.project, history)
