"""Losses on tiny hand-computed batches, plus gradient sanity (a step lowers the loss)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.losses import create_loss, infonce_loss, m3l_loss, patr_loss, vse_loss
from training.losses.c2c import CaptionCaptionLoss, c2c_loss
from training.losses.mining import hardest_negative, squared_distances

# Three 2-d texts and their images. Image ids 0, 1, 2 (all distinct).
TEXT = [[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]
IMAGE = [[0.0, 1.0], [1.0, 1.0], [3.0, 2.0]]


def tensors(text: list[list[float]] = TEXT, image: list[list[float]] = IMAGE, ids: list[int] | None = None):
    ids = ids if ids is not None else list(range(len(text)))
    return (
        torch.tensor(text, dtype=torch.float64),
        torch.tensor(image, dtype=torch.float64),
        torch.tensor(ids),
    )


def test_squared_distances_and_mining() -> None:
    t, i, ids = tensors()
    d = squared_distances(t, i).numpy()
    expected = np.array([[1, 2, 13], [2, 1, 8], [1, 2, 9]], dtype=float)
    np.testing.assert_allclose(d, expected)
    # Row 0: closest other image is 1 (d=2); row 1: image 0 (d=2); row 2: image 0 (d=1).
    assert hardest_negative(torch.from_numpy(expected), ids).tolist() == [1, 0, 0]
    # Same-image rows are never negatives: rows 0 and 1 share an image, so both must pick image 2.
    assert hardest_negative(torch.from_numpy(expected), torch.tensor([5, 5, 7])).tolist() == [2, 2, 0]


def test_mining_needs_two_images() -> None:
    with pytest.raises(ValueError, match="two different images"):
        hardest_negative(torch.zeros(2, 2), torch.tensor([3, 3]))


def test_m3l_hand_computed() -> None:
    t, i, ids = tensors()
    # negatives [1, 0, 0]; d+ = [1, 1, 9]; d(t, i-) = [2, 2, 1]; d(t, t-) = |t0-t1|²=1, |t1-t0|²=1, |t2-t0|²=4
    rho, a1, a2 = 2.0, 0.5, 1.0
    dp, dn, dt = np.array([1, 1, 9.0]), np.array([2, 2, 1.0]), np.array([1, 1, 4.0])
    expected = np.mean(a1 * dp**rho / dn**rho + a2 * dp**rho / dt**rho)
    got = m3l_loss(t, i, ids, rho=rho, alpha1=a1, alpha2=a2, eps=0.0).item()
    assert got == pytest.approx(expected)
    # Paper defaults (ρ=4, α1=0.5, α2=1).
    expected4 = np.mean(0.5 * dp**4 / dn**4 + dp**4 / dt**4)
    assert m3l_loss(t, i, ids, eps=0.0).item() == pytest.approx(expected4)


def test_m3l_bounded_hand_computed() -> None:
    t, i, ids = tensors()
    dp, dn, dt = np.array([1, 1, 9.0]), np.array([2, 2, 1.0]), np.array([1, 1, 4.0])
    r_image, r_text = (dp / dn) ** 4, (dp / dt) ** 4
    expected = np.mean(0.5 * r_image / (1 + r_image) + r_text / (1 + r_text))
    assert m3l_loss(t, i, ids, bounded=True, eps=0.0).item() == pytest.approx(expected)
    # Bounded: a negative on top of the anchor costs at most α1 + α2, where the paper's ratio explodes.
    collapsed = torch.zeros(3, 2, dtype=torch.float64)
    assert m3l_loss(collapsed, i, ids, bounded=True).item() <= 1.5
    assert m3l_loss(collapsed, i, ids).item() > 1e6


def test_patr_hand_computed() -> None:
    t, i, ids = tensors()
    # d+ = [1, 1, 9], d(t, i-) = [2, 2, 1]; η = 3 → hinge [1, 1, 2].
    assert patr_loss(t, i, ids, eta=3.0).item() == pytest.approx(np.mean([1 + 1, 1 + 1, 9 + 2]))
    # Far negatives cost nothing beyond the positive distance.
    assert patr_loss(t, i, ids, eta=0.5).item() == pytest.approx(np.mean([1, 1, 9]))


def test_vse_hand_computed() -> None:
    t, i, ids = tensors([[1, 0], [0, 1], [1, 1]], [[1, 0], [1, 1], [0, 1]])
    tn = t.numpy() / np.linalg.norm(t.numpy(), axis=1, keepdims=True)
    im = i.numpy() / np.linalg.norm(i.numpy(), axis=1, keepdims=True)
    s = tn @ im.T
    margin, total = 0.2, 0.0
    for k in range(3):
        others = [j for j in range(3) if j != k]
        total += max(0.0, margin - s[k, k] + max(s[k, j] for j in others))  # text k vs other images
        total += max(0.0, margin - s[k, k] + max(s[j, k] for j in others))  # image k vs other texts
    assert vse_loss(t, i, ids, margin=margin).item() == pytest.approx(total / 3)


def test_vse_ignores_rows_of_the_same_image() -> None:
    # Two captions of image 0 identical to image 1's caption would be violations, but they share an image.
    t, i, ids = tensors([[1, 0], [1, 0]], [[1, 0], [1, 0]], ids=[0, 0])
    assert vse_loss(t, i, ids).item() == 0.0


def test_vse_is_scale_invariant() -> None:
    t, i, ids = tensors()
    assert vse_loss(3 * t, i, ids).item() == pytest.approx(vse_loss(t, i, ids).item())


def test_infonce_hand_computed() -> None:
    t, i, ids = tensors([[1, 0], [0, 1], [1, 1]], [[1, 0], [1, 1], [0, 1]])
    tn = t.numpy() / np.linalg.norm(t.numpy(), axis=1, keepdims=True)
    im = i.numpy() / np.linalg.norm(i.numpy(), axis=1, keepdims=True)
    logits = tn @ im.T / 0.5

    def cross_entropy(rows: np.ndarray) -> float:
        return float(np.mean([np.log(np.exp(r).sum()) - r[k] for k, r in enumerate(rows)]))

    expected = 0.5 * (cross_entropy(logits) + cross_entropy(logits.T))
    assert infonce_loss(t, i, ids, temperature=0.5).item() == pytest.approx(expected)


def test_infonce_keeps_other_captions_of_the_same_image_out_of_the_softmax() -> None:
    # Rows 0 and 1 show image 0: each is compared with image 1 (row 2) only, not with each other (cosine 1, which
    # would cost log 2); row 2 has both as negatives. Positives have cosine 1, negatives 0, τ = 0.05.
    t, i, ids = tensors([[1, 0], [1, 0], [0, 1]], [[1, 0], [1, 0], [0, 1]], ids=[0, 0, 1])
    tail = np.exp(-1 / 0.05)
    expected = (2 * np.log1p(tail) + np.log1p(2 * tail)) / 3  # the same in both directions
    assert infonce_loss(t, i, ids).item() == pytest.approx(expected, rel=1e-6)


def test_c2c_hand_computed() -> None:
    # Two pairs: captions a0/b0 of image 0 (cosine 1), a1/b1 of image 1 (cosine 0.6); across pairs cosine 0 and 0.8.
    first = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    second = torch.tensor([[1.0, 0.0], [0.8, 0.6]], dtype=torch.float64)
    logits = np.array([[1.0, 0.8], [0.0, 0.6]]) / 0.5

    def cross_entropy(rows: np.ndarray) -> float:
        return float(np.mean([np.log(np.exp(r).sum()) - r[k] for k, r in enumerate(rows)]))

    expected = 0.5 * (cross_entropy(logits) + cross_entropy(logits.T))
    assert c2c_loss(first, second, temperature=0.5).item() == pytest.approx(expected)
    # Scale-free (cosines), and perfect pairs far from the others cost almost nothing.
    assert c2c_loss(3 * first, second, temperature=0.5).item() == pytest.approx(expected)
    assert c2c_loss(first, first, temperature=0.01).item() < 1e-6
    with pytest.raises(ValueError, match="temperature"):
        CaptionCaptionLoss(temperature=0.0)


def test_infonce_needs_a_positive_temperature() -> None:
    with pytest.raises(ValueError, match="temperature"):
        create_loss("infonce", temperature=0.0)


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("m3l", {}),
        ("m3l", {"rho": 1.0}),
        ("m3l", {"bounded": True}),
        ("patr", {"eta": 2.0}),
        ("vse", {}),
        ("infonce", {}),
    ],
)
def test_a_gradient_step_lowers_the_loss(name: str, options: dict[str, float]) -> None:
    torch.manual_seed(0)
    loss_fn = create_loss(name, **options)
    image = torch.nn.functional.normalize(torch.randn(16, 8), dim=1)
    ids = torch.arange(16)
    text = (image + 0.8 * torch.randn(16, 8)).requires_grad_(True)
    before = loss_fn(text, image, ids)
    before.backward()
    assert text.grad is not None and torch.isfinite(text.grad).all() and text.grad.abs().sum() > 0
    with torch.no_grad():
        after = loss_fn(text - 1e-3 * text.grad / text.grad.norm(), image, ids)
    assert after.item() < before.item()


def test_unknown_loss() -> None:
    with pytest.raises(ValueError, match="unknown loss 'triplet'"):
        create_loss("triplet")


def test_the_command_line_lists_every_loss() -> None:
    from training.cli.tower_cmd import LOSS_NAMES
    from training.losses import LOSSES

    assert tuple(LOSSES) == LOSS_NAMES


def test_each_loss_declares_its_own_keywords_with_their_defaults() -> None:
    """The command line's options of a loss are its module's OPTIONS: the same names and defaults as the loss."""
    import inspect

    from training.losses import TOWER_LOSSES

    for name, (loss, declared) in TOWER_LOSSES.items():
        keywords = {k: p.default for k, p in inspect.signature(loss).parameters.items()}
        assert {option.name: option.default for option in declared} == keywords, name


def test_loss_options_are_checked_against_the_loss() -> None:
    from training.losses import check_loss_options

    assert check_loss_options("m3l", {"rho": 2.0, "eta": None}) == {"rho": 2.0}
    with pytest.raises(ValueError, match="--eta, --margin do not apply to --loss m3l"):
        check_loss_options("m3l", {"eta": 1.0, "margin": 0.1, "rho": None})
    with pytest.raises(ValueError, match="unknown loss 'triplet'"):
        check_loss_options("triplet", {})
