"""SMALR's losses on hand-computed cases (training/losses/triplet, neighbourhood, mclm, adversarial)."""

from __future__ import annotations

import math

import pytest
import torch

from training.losses.adversarial import LanguageAdversary, language_adversarial_loss, reverse_gradient
from training.losses.mclm import MCLMHead, mclm_loss
from training.losses.neighbourhood import neighbourhood_loss
from training.losses.triplet import MultimodalTripletLoss, bidirectional_triplet_loss, topn_triplet_loss

# Three 2-d unit vectors at 0°, 90°, 180° and three at 0°, 60°, 90° (cosines are easy to write down).
A = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
B = torch.tensor([[1.0, 0.0], [0.5, math.sqrt(3) / 2], [0.0, 1.0]])


def test_topn_triplet_by_hand() -> None:
    # s = A·Bᵀ = [[1, .5, 0], [0, .866, 1], [-1, -.5, 0]]; violation_kj = max(0, m − s_kk + s_kj), j ≠ k:
    # row 0: 0.05−1+0.5 <0, 0.05−1+0 <0; row 1: 0.05−0.866+0 <0, 0.05−0.866+1 = 0.184;
    # row 2: 0.05−0−1 <0, 0.05−0−0.5 <0 → the only violation is 0.184 (anchor 1).
    violation = 0.05 - math.sqrt(3) / 2 + 1.0
    # per anchor its top 1: (0 + 0.184 + 0) / 3
    assert topn_triplet_loss(A, B, margin=0.05, top_n=1).item() == pytest.approx(violation / 3, abs=1e-6)
    # top 2 per anchor = every triplet: 0.184 / 6; more than B − 1 requested: the same
    assert topn_triplet_loss(A, B, margin=0.05, top_n=2).item() == pytest.approx(violation / 6, abs=1e-6)
    assert topn_triplet_loss(A, B, 0.05, top_n=100).item() == pytest.approx(violation / 6, abs=1e-6)


def test_bidirectional_weights_the_sentence_direction_by_lambda1() -> None:
    images, texts = A, B
    expected = topn_triplet_loss(images, texts, 0.05, 10) + 1.5 * topn_triplet_loss(texts, images, 0.05, 10)
    assert bidirectional_triplet_loss(images, texts).item() == pytest.approx(expected.item())
    # sentence anchors: s = B·Aᵀ = [[1, 0, −1], [.5, .866, −.5], [0, 1, 0]]; only row 2 violates: 1.05 and 0.05
    assert topn_triplet_loss(texts, images, 0.05, 1).item() == pytest.approx(1.05 / 3)
    assert topn_triplet_loss(texts, images, 0.05, 2).item() == pytest.approx(1.1 / 6)
    assert MultimodalTripletLoss()(images, texts).item() == pytest.approx(expected.item())


def test_well_separated_pairs_cost_nothing() -> None:
    eye = torch.eye(4)
    assert topn_triplet_loss(eye, eye).item() == 0.0
    assert neighbourhood_loss(eye, eye).item() == 0.0


def test_neighbourhood_is_symmetric_sum() -> None:
    expected = topn_triplet_loss(A, B) + topn_triplet_loss(B, A)
    assert neighbourhood_loss(A, B).item() == pytest.approx(expected.item())


def test_mclm_by_hand() -> None:
    # masked (1,0) + predicted (0,1) → ℓ2 = (1,1)/√2; target (0,1): distance √((1/√2)² + (1/√2 − 1)²)
    masked = torch.tensor([[1.0, 0.0]])
    predicted = torch.tensor([[0.0, 1.0]])
    full = torch.tensor([[0.0, 3.0]])  # normalised inside
    one = math.sqrt(0.5 + (math.sqrt(0.5) - 1) ** 2)
    # the second sentence is completed exactly: contributes 0
    loss = mclm_loss(masked, predicted, full, torch.tensor([[2.0, 0.0]]), torch.zeros(1, 2), torch.tensor([[1.0, 0.0]]))
    assert loss.item() == pytest.approx(one, abs=1e-6)


def test_mclm_head_learns_to_complete() -> None:
    torch.manual_seed(0)
    head = MCLMHead(4)
    # the two sentences mean the same thing; each keeps the half the other lost: completion is learnable
    full_i = full_j = torch.randn(16, 4)
    masked_i, masked_j = full_i * torch.tensor([1.0, 1.0, 0.0, 0.0]), full_j * torch.tensor([0.0, 0.0, 1.0, 1.0])
    optimizer = torch.optim.Adam(head.parameters(), lr=0.05)
    first = head(masked_i, masked_j, full_i, full_j).item()
    for _ in range(200):
        loss = head(masked_i, masked_j, full_i, full_j)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.5 * first


def test_adversarial_loss_is_cross_entropy_and_reverses_gradients() -> None:
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
    labels = torch.tensor([0, 0])
    by_hand = -(math.log(math.exp(2) / (math.exp(2) + 1)) + math.log(1 / (1 + math.e))) / 2
    assert language_adversarial_loss(logits, labels).item() == pytest.approx(by_hand)
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    (reverse_gradient(x) * torch.tensor([3.0, 4.0])).sum().backward()
    assert x.grad is not None and x.grad.tolist() == [-3.0, -4.0]


def test_adversary_trains_classifier_against_features() -> None:
    torch.manual_seed(0)
    features = torch.randn(8, 3, requires_grad=True)
    adversary = LanguageAdversary(3, 2, hidden=4)
    loss = adversary(features, torch.tensor([0, 1] * 4))
    loss.backward()
    plain = torch.nn.functional.cross_entropy(adversary.classifier(features), torch.tensor([0, 1] * 4))
    grad_plain = torch.autograd.grad(plain, features)[0]
    assert features.grad is not None and torch.allclose(features.grad, -grad_plain)
