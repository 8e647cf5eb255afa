"""The DPCCA family on hand-computed and tiny cases: CCA, PCCA, the NOI steps, BLEU+1, and the CLI."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from training.align.c2c_eval import bleu_plus_one, c2c_table, retrieve
from training.align.cca import conditional, covariance, fit_cca, fit_pcca, inverse_sqrt
from training.align.dcca import MovingCovariances, NoiConfig, NoiTrainer, conditional_covariance, residual
from training.align.dcca import inverse_sqrt as torch_inverse_sqrt


def test_inverse_sqrt_whitens() -> None:
    a = np.array([[4.0, 0.0], [0.0, 9.0]])
    assert np.allclose(inverse_sqrt(a), [[0.5, 0.0], [0.0, 1 / 3]])
    m = np.random.default_rng(0).normal(size=(5, 5))
    s = m @ m.T + np.eye(5)
    r = inverse_sqrt(s)
    assert np.allclose(r @ s @ r, np.eye(5), atol=1e-8)
    assert np.allclose(torch_inverse_sqrt(torch.from_numpy(s), 0.0).numpy(), r, atol=1e-8)


def test_cca_of_one_dimensional_views_is_their_correlation() -> None:
    rng = np.random.default_rng(0)
    shared = rng.normal(size=(4000, 1))
    x, y = shared + 0.5 * rng.normal(size=(4000, 1)), shared + 1.0 * rng.normal(size=(4000, 1))
    fitted = fit_cca(x, y, 1, eps=0.0)
    assert fitted.correlations[0] == pytest.approx(abs(np.corrcoef(x[:, 0], y[:, 0])[0, 1]), abs=1e-9)
    # Whitened: each projection has unit variance on the training data.
    assert np.var(fitted.project_x(x), ddof=1) == pytest.approx(1.0, rel=1e-4)


def test_cca_finds_the_shared_direction_among_noise() -> None:
    rng = np.random.default_rng(1)
    n, shared = 3000, rng.normal(size=(3000, 1))
    x = np.hstack([shared, rng.normal(size=(n, 3))]) @ rng.normal(size=(4, 4))  # mixed into every column
    y = np.hstack([rng.normal(size=(n, 2)), -shared]) @ rng.normal(size=(3, 3))
    fitted = fit_cca(x, y, 2, eps=1e-6)
    assert fitted.correlations[0] > 0.99 and fitted.correlations[1] < 0.1
    assert abs(np.corrcoef(fitted.project_x(x)[:, 0], shared[:, 0])[0, 1]) > 0.99


def test_partial_cca_is_the_partial_correlation_in_one_dimension() -> None:
    """ρ_xy·z = (ρ_xy − ρ_xz ρ_yz) / √((1 − ρ_xz²)(1 − ρ_yz²)): the textbook partial correlation."""
    rng = np.random.default_rng(2)
    z = rng.normal(size=(5000, 1))
    s = rng.normal(size=(5000, 1))  # what the two views share beyond z
    x, y = z + 0.7 * s + 0.5 * rng.normal(size=(5000, 1)), z + 0.7 * s + 0.5 * rng.normal(size=(5000, 1))
    c = np.corrcoef(np.hstack([x, y, z]).T)
    partial = (c[0, 1] - c[0, 2] * c[1, 2]) / np.sqrt((1 - c[0, 2] ** 2) * (1 - c[1, 2] ** 2))
    assert fit_pcca(x, y, z, 1, eps=0.0).correlations[0] == pytest.approx(partial, abs=1e-9)
    assert fit_pcca(x, y, z, 1, eps=0.0).correlations[0] < fit_cca(x, y, 1, eps=0.0).correlations[0]


def test_conditional_covariance_is_the_covariance_of_residuals() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(500, 2))
    x = z @ rng.normal(size=(2, 3)) + rng.normal(size=(500, 3))
    s_zz_inv = np.linalg.inv(covariance(z, z))
    residuals = (x - x.mean(0)) - (z - z.mean(0)) @ s_zz_inv @ covariance(x, z).T
    assert np.allclose(
        conditional(covariance(x, x), covariance(x, z), covariance(x, z), s_zz_inv), covariance(residuals, residuals)
    )
    # The torch version used by DPCCA agrees (rows centred already).
    t = torch.from_numpy
    s_fh = t(covariance(x, z))
    res = residual(t(x - x.mean(0)), t(z - z.mean(0)), s_fh, t(s_zz_inv))
    assert np.allclose(res.numpy(), residuals)
    assert np.allclose(
        conditional_covariance(t(covariance(x, x)), s_fh, t(s_zz_inv)).numpy(), covariance(residuals, residuals)
    )


def test_moving_covariances_follow_eq_12() -> None:
    cov = MovingCovariances(rho=0.75)
    a = torch.tensor([[1.0], [-1.0]])
    assert cov.update("ff", a, a).item() == 1.0  # first batch initialises: (1 + 1) / 2
    assert cov.update("ff", 3 * a, 3 * a).item() == pytest.approx(0.75 * 1 + 0.25 * 9)
    with pytest.raises(ValueError):
        MovingCovariances(rho=1.0)


def _linear_views(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 2000
    z = rng.normal(size=(n, 2))
    s = rng.normal(size=(n, 2))
    x = np.hstack([z, s, rng.normal(size=(n, 2))]) @ rng.normal(size=(6, 6)) * 0.5
    y = np.hstack([z, s, rng.normal(size=(n, 2))]) @ rng.normal(size=(6, 6)) * 0.5
    return x.astype(np.float32), y.astype(np.float32), z.astype(np.float32)


@pytest.mark.parametrize("variant", ["dcca-noi", "dpcca-a", "dpcca-b"])
def test_noi_training_aligns_the_views(variant: str) -> None:
    torch.set_num_threads(1)
    x, y, z = _linear_views()
    trainer = NoiTrainer(NoiConfig(variant=variant, dim=2, hidden_layers=1, lr=3e-3, batch_size=100), 6, 6, 2)
    before = retrieve(trainer.project("x", x[:200]), trainer.project("y", y[:200]))[0].mean()
    tx, ty, tz = (torch.from_numpy(a) for a in (x, y, z))
    rng = np.random.default_rng(0)
    for _ in range(15):
        for batch in np.array_split(rng.permutation(len(x)), 20):
            trainer.step(tx[batch], ty[batch], None if variant == "dcca-noi" else tz[batch])
    fx, gy = trainer.project("x", x), trainer.project("y", y)
    if variant != "dcca-noi":  # DPCCA correlates what the image view does not explain: the residuals given z
        shared = z if trainer.h is None else trainer.h(torch.from_numpy(z)).detach().numpy()  # B: the learnt H(Z)
        zc = np.hstack([shared, np.ones((len(z), 1))])
        fx = fx - zc @ np.linalg.lstsq(zc, fx, rcond=None)[0]
        gy = gy - zc @ np.linalg.lstsq(zc, gy, rcond=None)[0]
    corr = [abs(np.corrcoef(fx[:, k], gy[:, k])[0, 1]) for k in range(2)]
    assert min(corr) > 0.8, corr  # the two views now agree along both output dimensions
    assert retrieve(trainer.project("x", x[:200]), trainer.project("y", y[:200]))[0].mean() > before


def test_deep_variants_need_the_image_view() -> None:
    with pytest.raises(ValueError, match="shared"):
        NoiTrainer(NoiConfig(variant="dpcca-b"), 4, 4, 0)
    with pytest.raises(ValueError, match="unknown"):
        NoiTrainer(NoiConfig(variant="gcca"), 4, 4, 4)


def test_bleu_plus_one_by_hand() -> None:
    assert bleu_plus_one(["a dog runs ."], ["A dog runs ."])[0] == pytest.approx(1.0)
    # "the cat sat" vs "the cat ran": 1-grams 2/3; +1 smoothing for n > 1: 2-grams (1+1)/(2+1), 3-grams
    # (0+1)/(1+1), 4-grams (0+1)/(0+1); brevity penalty 1; geometric mean of the four.
    expected = (2 / 3 * 2 / 3 * 1 / 2 * 1) ** (1 / 4)
    assert bleu_plus_one(["the cat sat"], ["the cat ran"])[0] == pytest.approx(expected, abs=1e-4)


def test_c2c_table_counts_hits_both_ways() -> None:
    x = np.eye(3, dtype=np.float32)
    y = np.array([[1, 0, 0], [0, 0, 1], [0, 1, 0]], dtype=np.float32)  # rows 1 and 2 swapped
    table = c2c_table(x, y, ["a", "b c", "d"], ["a", "d", "b c"], "en", "de")
    assert table["en→de"]["r1"] == pytest.approx(1 / 3) and table["de→en"]["r1"] == pytest.approx(1 / 3)
    assert table["en→de"]["bleu1"] < 1 and table["en→de"]["queries"] == 3
