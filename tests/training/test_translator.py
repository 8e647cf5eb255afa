"""The Translator: closed-form initialisations, RCSLS, word-translation P@1 and folding into a tower."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from indexer.tower import TextTower
from training.translator.model import (
    TranslatedTower,
    fold,
    knn_mean,
    least_squares,
    procrustes,
    rcsls_loss,
    refine_rcsls,
    translation_p1,
)


def test_least_squares_recovers_a_linear_map_by_hand() -> None:
    source = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    m = np.array([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]])  # 2-d → 3-d
    assert np.allclose(least_squares(source, source @ m.T), m)
    # A ridge shrinks: one sample x = 1 → y = 2 with ridge 1 gives (x·y)/(x² + 1) = 1.
    assert least_squares(np.array([[1.0]]), np.array([[2.0]]), ridge=1.0)[0, 0] == pytest.approx(1.0)


def test_procrustes_finds_the_rotation() -> None:
    rng = np.random.default_rng(0)
    rotation, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    source = rng.normal(size=(50, 4))
    m = procrustes(source, source @ rotation.T + 0.01 * rng.normal(size=(50, 4)))
    assert np.allclose(m, rotation, atol=0.02)
    assert np.allclose(m @ m.T, np.eye(4), atol=1e-9)  # orthogonal
    wide = procrustes(source[:, :3], source @ rotation.T)  # 3-d → 4-d: semi-orthogonal columns
    assert wide.shape == (4, 3) and np.allclose(wide.T @ wide, np.eye(3), atol=1e-9)


def test_rcsls_loss_by_hand() -> None:
    a = torch.eye(2)
    b = torch.eye(2)
    # M = I, k = 1: each pair contributes −2·1 + r(Ma, B) = 1 + r(b, MA) = 1 → 0.
    assert rcsls_loss(torch.eye(2), a, b, k=1).item() == pytest.approx(0.0)
    # k = 2: the neighbour means become (1 + 0)/2 each → −2 + 0.5 + 0.5 = −1.
    assert rcsls_loss(torch.eye(2), a, b, k=2).item() == pytest.approx(-1.0)
    assert knn_mean(a, b, 1).tolist() == [1.0, 1.0]


def test_rcsls_refinement_improves_a_noisy_start_and_word_translation() -> None:
    rng = np.random.default_rng(1)
    rotation, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    source = rng.normal(size=(200, 8))
    target = source @ rotation.T
    start = rotation + 0.4 * rng.normal(size=(8, 8))
    refined, history = refine_rcsls(start, source, target, k=5, steps=60, lr=0.5)
    assert history[-1] < history[0]
    gold = [{i} for i in range(200)]
    assert translation_p1(refined, source, gold, target) > translation_p1(start, source, gold, target)
    assert translation_p1(rotation, source, gold, target) == 1.0


def test_folding_the_translator_into_the_tower_is_exact() -> None:
    torch.manual_seed(0)
    tower = TextTower(input_dim=6, output_dim=5, hidden_dims=[7], dropouts=[0.0, 0.0], final_relu=False)
    m = np.random.default_rng(2).normal(size=(6, 4))
    x = np.random.default_rng(3).normal(size=(10, 4)).astype(np.float32)
    combined = TranslatedTower(m, tower).eval()
    with torch.no_grad():
        expected = torch.nn.functional.normalize(combined(torch.from_numpy(x)), dim=-1).numpy()
    folded = fold(m, tower, text_encoder="e5-small", languages=["zh"])
    assert folded.config["input_dim"] == 4 and folded.text_encoder == "e5-small"
    assert np.allclose(folded.embed(x), expected, atol=1e-5)
