"""Closed-form CCA and Partial CCA between two text views, conditioned (PCCA) on a third, visual view.

Rotman, Vulić & Reichart 2018, "Bridging Languages through Images with Deep Partial CCA" (``../shared/papers/
dpcca-bridging-languages-through-images.md``). Rows are samples here (the paper's columns):

* CCA (Hotelling 1936; the paper's Eq. 1 with f, g the identity): maximise ``tr(Wᵀ Σ_XY V)`` subject to
  ``Wᵀ Σ_XX W = Vᵀ Σ_YY V = I``. Solution: ``T = Σ_XX^{-1/2} Σ_XY Σ_YY^{-1/2} = U D Qᵀ`` (SVD),
  ``W = Σ_XX^{-1/2} U_L``, ``V = Σ_YY^{-1/2} Q_L``; D holds the canonical correlations.
* PCCA (Rao 1969; the paper's Eqs. 3–9 with f, g the identity): the same on the residuals of X and Y after the
  linear regression on Z, i.e. on the conditional covariances ``Σ_XX|Z = Σ_XX − Σ_XZ Σ_ZZ^{-1} Σ_ZX`` (Eq. 9),
  ``Σ_YY|Z`` alike, and ``Σ_XY|Z = Σ_XY − Σ_XZ Σ_ZZ^{-1} Σ_ZY``.

Covariances are ``1/(N−1) · centredᵀ centred`` with ``ε`` added to every auto-covariance's diagonal (the paper's
footnote 4). At query time no image is needed: ``F(x) = (x − μ_X) W`` and ``G(y) = (y − μ_Y) V`` (§3.2, §5).
"""

from __future__ import annotations

import numpy as np

from indexer.captions.alignment import LinearAlignment  # the served form of a fitted alignment


def covariance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``1/(N−1) · (a − ā)ᵀ (b − b̄)`` for row-sample matrices (float64)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a - a.mean(axis=0)).T @ (b - b.mean(axis=0)) / max(len(a) - 1, 1)


def inverse_sqrt(matrix: np.ndarray, eps: float = 0.0) -> np.ndarray:
    """``(M + εI)^{-1/2}`` of a symmetric positive (semi-)definite matrix, by its eigendecomposition."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2 + eps * np.eye(len(matrix)))
    values = np.maximum(values, 1e-12)
    return (vectors / np.sqrt(values)) @ vectors.T


def conditional(s_ab: np.ndarray, s_az: np.ndarray, s_bz: np.ndarray, s_zz_inv: np.ndarray) -> np.ndarray:
    """``Σ_AB|Z = Σ_AB − Σ_AZ Σ_ZZ^{-1} Σ_ZB``: the covariance of the residuals of A and B regressed on Z (Eq. 9)."""
    return s_ab - s_az @ s_zz_inv @ s_bz.T


def cca_from_covariances(
    s_xx: np.ndarray, s_yy: np.ndarray, s_xy: np.ndarray, dim: int, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W, V, correlations)`` of CCA given the (cross-)covariances; ε regularises both auto-covariances."""
    if not 1 <= dim <= min(len(s_xx), len(s_yy)):
        raise ValueError(f"CCA dimension must be in 1..{min(len(s_xx), len(s_yy))}, got {dim}")
    root_x, root_y = inverse_sqrt(s_xx, eps), inverse_sqrt(s_yy, eps)
    u, d, qt = np.linalg.svd(root_x @ s_xy @ root_y)
    return root_x @ u[:, :dim], root_y @ qt.T[:, :dim], d[:dim]


def fit_cca(x: np.ndarray, y: np.ndarray, dim: int, eps: float = 1e-3) -> LinearAlignment:
    """Linear CCA of paired rows ``x[i] ↔ y[i]``."""
    w, v, corr = cca_from_covariances(covariance(x, x), covariance(y, y), covariance(x, y), dim, eps)
    return LinearAlignment(_mean(x), _mean(y), w, v, corr)


def fit_pcca(x: np.ndarray, y: np.ndarray, z: np.ndarray, dim: int, eps: float = 1e-3) -> LinearAlignment:
    """Partial CCA of ``x[i] ↔ y[i]`` given the shared view ``z[i]`` (the image both captions describe)."""
    s_zz_inv = np.linalg.inv(covariance(z, z) + eps * np.eye(z.shape[1]))
    s_xz, s_yz = covariance(x, z), covariance(y, z)
    s_xx = conditional(covariance(x, x), s_xz, s_xz, s_zz_inv)
    s_yy = conditional(covariance(y, y), s_yz, s_yz, s_zz_inv)
    s_xy = conditional(covariance(x, y), s_xz, s_yz, s_zz_inv)
    w, v, corr = cca_from_covariances(s_xx, s_yy, s_xy, dim, eps)
    return LinearAlignment(_mean(x), _mean(y), w, v, corr)


def _mean(a: np.ndarray) -> np.ndarray:
    return np.asarray(np.mean(a, axis=0, dtype=np.float64))


def pca(z: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, components (D, dim))`` of the principal components: the paper compresses the visual features to
    the text dimensionality this way (§6)."""
    mean = z.mean(axis=0, dtype=np.float64)
    _, _, vt = np.linalg.svd(np.asarray(z, dtype=np.float64) - mean, full_matrices=False)
    return mean, vt[: min(dim, len(vt))].T
