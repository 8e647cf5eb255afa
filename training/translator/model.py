"""The TRANSLATOR of "Grounding multilingual concepts with vision" (``../shared/papers/translator-grounding-
multilingual-concepts.md``): a linear map M from a language's (or another encoder's) embedding space into the
pivot space the text tower reads, initialised in closed form from a bilingual lexicon and refined with RCSLS,
then embedded before the tower (``s(i, t) = ⟨f(M·t), g(i)⟩``).

Rows are samples here: ``source`` (n, d_s) embeddings of the new language's words, ``target`` (n, d_t) of their
translations in the pivot; M is (d_t, d_s) and maps a row ``a`` to ``M a``.

* ``least_squares``: the poster's "SVD" step, ``argmin_M ‖M T − I‖²`` (T the sources, I the targets as
  columns), solved with the SVD pseudo-inverse, plus an optional ridge.
* ``procrustes``: the orthogonal solution of the same problem, ``M = U Vᵀ`` for ``I Tᵀ = U Σ Vᵀ`` (semi-orthogonal
  when d_s ≠ d_t); it keeps the source geometry, the usual choice for word translation.
* ``rcsls_loss`` / ``refine_rcsls`` (Joulin et al. 2018, "Loss in translation"): minimise
  ``1/n Σ_i −2 (M a_i)ᵀ b_i + r(M a_i, B) + r(b_i, M A)``, with ``r(x, Y)`` the mean similarity of x to its k
  nearest neighbours in Y, on unit vectors: a retrieval criterion that penalises hubs.
* ``fold``: ``W₁ (M t) + b₁ = (W₁ M) t + b₁``: a tower preceded by M is a tower on the source space, so the
  service needs nothing new to serve it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from indexer.tower import TextTower


def unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def least_squares(source: np.ndarray, target: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """``argmin_M ‖M Sᵀ − Tᵀ‖² + ridge ‖M‖²``; with ridge 0 the SVD pseudo-inverse solution ``Tᵀ (Sᵀ)⁺``."""
    s, t = np.asarray(source, dtype=np.float64), np.asarray(target, dtype=np.float64)
    if ridge > 0:
        return np.linalg.solve(s.T @ s + ridge * np.eye(s.shape[1]), s.T @ t).T
    return (np.linalg.pinv(s) @ t).T


def procrustes(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The (semi-)orthogonal M minimising ``‖M Sᵀ − Tᵀ‖``: ``U Vᵀ`` from the SVD of ``Tᵀ S``."""
    u, _, vt = np.linalg.svd(
        np.asarray(target, dtype=np.float64).T @ np.asarray(source, dtype=np.float64), full_matrices=False
    )
    return u @ vt


def knn_mean(queries: torch.Tensor, pool: torch.Tensor, k: int) -> torch.Tensor:
    """``r(x, Y)``: each query's mean cosine to its k nearest rows of ``pool`` (unit rows)."""
    scores = queries @ pool.T
    return scores.topk(min(k, pool.shape[0]), dim=1).values.mean(dim=1)


def rcsls_loss(m: torch.Tensor, source: torch.Tensor, target: torch.Tensor, k: int = 10) -> torch.Tensor:
    """RCSLS over the pairs ``(source[i], target[i])`` (unit rows); the neighbour pools are all the pairs'
    targets (B) and all mapped sources (M A)."""
    mapped = F.normalize(source @ m.T, dim=1)
    return (-2 * (mapped * target).sum(dim=1) + knn_mean(mapped, target, k) + knn_mean(target, mapped, k)).mean()


def refine_rcsls(
    m: np.ndarray, source: np.ndarray, target: np.ndarray, k: int = 10, steps: int = 50, lr: float = 1.0
) -> tuple[np.ndarray, list[float]]:
    """Full-batch gradient descent on RCSLS from ``m`` (Joulin et al. refine a Procrustes start the same way);
    returns the refined M and the loss per step."""
    a = torch.from_numpy(unit(source)).float()
    b = torch.from_numpy(unit(target)).float()
    weight = torch.tensor(np.asarray(m, dtype=np.float32), requires_grad=True)
    optimizer = torch.optim.SGD([weight], lr=lr)
    history = []
    for _ in range(steps):
        loss = rcsls_loss(weight, a, b, k)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(float(loss.detach()))
    return weight.detach().numpy().astype(np.float64), history


def translation_p1(m: np.ndarray, queries: np.ndarray, gold: Sequence[set[int]], candidates: np.ndarray) -> float:
    """Word translation precision@1: the nearest candidate (cosine) to ``M q`` is one of q's gold translations."""
    best = (unit(unit(queries) @ m.T) @ unit(candidates).T).argmax(axis=1)
    return float(np.mean([int(b) in g for b, g in zip(best.tolist(), gold, strict=True)])) if len(gold) else 0.0


class TranslatedTower(torch.nn.Module):
    """``tower(M · t)``: the Translator embedded before a (pretrained or fresh) tower; both train together."""

    def __init__(self, m: np.ndarray | torch.Tensor, tower: TextTower) -> None:
        super().__init__()
        weight = torch.as_tensor(np.asarray(m, dtype=np.float32)) if not isinstance(m, torch.Tensor) else m
        self.translator = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        with torch.no_grad():
            self.translator.weight.copy_(weight)
        self.tower = tower

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tower(self.translator(x))


def fold(
    m: np.ndarray, tower: TextTower, text_encoder: str | None = None, languages: Sequence[str] | None = None
) -> TextTower:
    """A plain TextTower on the source space equal to ``tower(M · t)`` (M folded into its first layer)."""
    config = dict(tower.config)
    config.update(input_dim=int(m.shape[1]))
    if text_encoder is not None:
        config["text_encoder"] = text_encoder
    if languages is not None:
        config["languages"] = sorted(languages)
    folded = TextTower(**config)
    state = copy.deepcopy(tower.state_dict())
    first = next(name for name in state if name.endswith("weight"))  # the first Linear's weight
    state[first] = state[first] @ torch.from_numpy(np.asarray(m, dtype=np.float32))
    folded.load_state_dict(state)
    folded.eval()
    return folded
