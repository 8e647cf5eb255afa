"""Deep CCA by non-linear orthogonal iterations (DCCA_NOI) and Deep Partial CCA (DPCCA, Variants A and B).

Rotman, Vulić & Reichart 2018 (``../shared/papers/dpcca-bridging-languages-through-images.md``), §3–4:

* Two branches ``F(X) = Wᵀ f(X)`` and ``G(Y) = Vᵀ g(Y)`` (an MLP then a final linear layer to L dimensions),
  centred at the final layer (footnote 2: a moving mean, kept for query time).
* Covariances are moving averages over minibatches (Eq. 12): ``Σ ← ρ Σ + (1 − ρ) Σ_batch``, initialised from the
  first batch. The paper writes the batch term ``(N−1)/|b| · F Fᵀ``; we use the per-sample estimate
  ``1/|b| · F Fᵀ`` of the same covariance, so whitened targets have unit variance instead of a data-size scale
  (which only rescales the outputs).
* DCCA_NOI (Algorithm 1): fix ``G̃ = G Σ_GG^{-1/2}`` (Eq. 13) and take a step on ``1/|b| ‖F − G̃‖²`` (Eq. 15)
  for f, W; then fix ``F̃ = F Σ_FF^{-1/2}`` and step on ``1/|b| ‖G − F̃‖²`` (Eq. 16) for g, V.
* DPCCA (Algorithm 2): the same on residuals given the shared (image) view. With ``H`` the image view,
  ``F|H = F − H Σ_HH^{-1} Σ_FHᵀ`` (Eq. 7) and ``Σ_FF|H = Σ_FF − Σ_FH Σ_HH^{-1} Σ_FHᵀ`` (Eq. 9); the targets are
  whitened by the conditional covariances (Eqs. 17–18) and the steps minimise Eqs. 19–20. Variant A keeps the
  image view fixed, ``H = σ(Z)`` (the network's activation, footnote 6); Variant B learns ``H(Z) = Uᵀ h(Z)`` with
  the same architecture, updated in both steps.

At query time only ``F(x)`` and ``G(y)`` are computed: no image is needed (§3.2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from training.schedule import Schedule

ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "relu": nn.ReLU}
VARIANTS = ("dcca-noi", "dpcca-a", "dpcca-b")


class Branch(nn.Module):
    """``Wᵀ f(x)``: ``len(hidden)`` non-linear layers, then a linear layer to ``out_dim``; output centred by a
    moving mean (a buffer, so it is saved with the weights)."""

    mean: torch.Tensor

    def __init__(self, in_dim: int, hidden: list[int], out_dim: int, activation: str = "tanh") -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = in_dim
        for size in hidden:
            layers += [nn.Linear(width, size), ACTIVATIONS[activation]()]
            width = size
        layers.append(nn.Linear(width, out_dim))
        self.net = nn.Sequential(*layers)
        self.register_buffer("mean", torch.zeros(out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def inverse_sqrt(matrix: torch.Tensor, eps: float) -> torch.Tensor:
    """``(Σ + εI)^{-1/2}`` of a symmetric matrix (float64 eigendecomposition)."""
    sym = (matrix + matrix.T).double() / 2 + eps * torch.eye(len(matrix), dtype=torch.float64)
    values, vectors = torch.linalg.eigh(sym)
    return ((vectors / values.clamp_min(1e-12).sqrt()) @ vectors.T).to(matrix.dtype)


class MovingCovariances:
    """Eq. (12): moving averages of batch (cross-)covariances, keyed by name; the first update initialises."""

    def __init__(self, rho: float) -> None:
        if not 0.0 <= rho < 1.0:
            raise ValueError("the time constant ρ must be in [0, 1)")
        self.rho = rho
        self.values: dict[str, torch.Tensor] = {}

    def update(self, name: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        batch = a.detach().T @ b.detach() / len(a)
        old = self.values.get(name)
        self.values[name] = batch if old is None else self.rho * old + (1 - self.rho) * batch
        return self.values[name]


def residual(f: torch.Tensor, h: torch.Tensor, s_fh: torch.Tensor, s_hh_inv: torch.Tensor) -> torch.Tensor:
    """``F|H = F − H Σ_HH^{-1} Σ_FHᵀ`` (rows are samples): what of F the image view does not explain (Eq. 7)."""
    return f - h @ s_hh_inv @ s_fh.T


def conditional_covariance(s_ff: torch.Tensor, s_fh: torch.Tensor, s_hh_inv: torch.Tensor) -> torch.Tensor:
    """``Σ_FF|H = Σ_FF − Σ_FH Σ_HH^{-1} Σ_FHᵀ`` (Eq. 9)."""
    return s_ff - s_fh @ s_hh_inv @ s_fh.T


@dataclass
class NoiConfig(Schedule):
    unused = ("steps", "warmup", "beta1")

    variant: str = "dcca-noi"
    dim: int = 128  # L
    hidden_layers: int = 2  # hidden widths = the input size (§6: "mid-layers are set to the input size")
    activation: str = "tanh"
    rho: float = 0.9
    eps: float = 1e-3
    history: list[float] = field(default_factory=list)


def _centre(out: torch.Tensor, branch: Branch, rho: float, training: bool) -> torch.Tensor:
    if training:
        with torch.no_grad():
            batch_mean = out.mean(dim=0)
            first = bool((branch.mean == 0).all())
            branch.mean.copy_(batch_mean if first else rho * branch.mean + (1 - rho) * batch_mean)
        return out - out.mean(dim=0)
    return out - branch.mean


class NoiTrainer:
    """One NOI step per minibatch (Algorithms 1 and 2) for the chosen variant."""

    def __init__(self, config: NoiConfig, x_dim: int, y_dim: int, z_dim: int = 0) -> None:
        if config.variant not in VARIANTS:
            raise ValueError(f"unknown deep variant {config.variant!r}; choose one of: {', '.join(VARIANTS)}")
        if config.variant != "dcca-noi" and z_dim == 0:
            raise ValueError(f"{config.variant} needs the shared (image) view")
        torch.manual_seed(config.seed)
        self.config = config
        self.f = Branch(x_dim, [x_dim] * config.hidden_layers, config.dim, config.activation)
        self.g = Branch(y_dim, [y_dim] * config.hidden_layers, config.dim, config.activation)
        self.h = (
            Branch(z_dim, [z_dim] * config.hidden_layers, config.dim, config.activation)
            if config.variant == "dpcca-b"
            else None
        )
        h_params = list(self.h.parameters()) if self.h is not None else []
        self.opt_f = torch.optim.Adam([*self.f.parameters(), *h_params], lr=config.lr)
        self.opt_g = torch.optim.Adam([*self.g.parameters(), *h_params], lr=config.lr)
        self.cov = MovingCovariances(config.rho)
        self.activation = ACTIVATIONS[config.activation]()

    def _shared(self, z: torch.Tensor) -> torch.Tensor:
        if self.h is not None:  # Variant B: learnt H(Z)
            return _centre(self.h(z), self.h, self.config.rho, True)
        shared = self.activation(z)  # Variant A: σ(Z), fixed
        return shared - shared.mean(dim=0)

    def step(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor | None) -> float:
        """One minibatch: the f-step then the g-step; returns the mean of the two objectives."""
        eps, cov = self.config.eps, self.cov
        losses = []
        for side in ("f", "g"):
            f = _centre(self.f(x), self.f, self.config.rho, True)
            g = _centre(self.g(y), self.g, self.config.rho, True)
            s_ff = cov.update("ff", f, f) if side == "f" else cov.values["ff"]
            s_gg = cov.update("gg", g, g) if side == "f" else cov.values["gg"]
            if z is None:  # DCCA_NOI, Algorithm 1
                own, other, s_other = (f, g, s_gg) if side == "f" else (g, f, s_ff)
            else:  # DPCCA, Algorithm 2
                h = self._shared(z)
                s_hh_inv = torch.linalg.inv(
                    (cov.update("hh", h, h) if side == "f" else cov.values["hh"]) + eps * torch.eye(h.shape[1])
                )
                s_fh = cov.update("fh", f, h) if side == "f" else cov.values["fh"]
                s_gh = cov.update("gh", g, h) if side == "f" else cov.values["gh"]
                f_h, g_h = residual(f, h, s_fh, s_hh_inv), residual(g, h, s_gh, s_hh_inv)
                s_ff_h = conditional_covariance(s_ff, s_fh, s_hh_inv)
                s_gg_h = conditional_covariance(s_gg, s_gh, s_hh_inv)
                own, other, s_other = (f_h, g_h, s_gg_h) if side == "f" else (g_h, f_h, s_ff_h)
            target = other.detach() @ inverse_sqrt(s_other.detach(), eps)  # Eqs. 13, 17, 18
            loss = ((own - target) ** 2).sum() / len(own)  # Eqs. 15–16, 19–20
            optimizer = self.opt_f if side == "f" else self.opt_g
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        return float(np.mean(losses))

    def project(self, side: str, inputs: np.ndarray, batch: int = 4096) -> np.ndarray:
        """``F(x)`` or ``G(y)`` (centred by the training mean), no image needed."""
        branch = self.f if side == "x" else self.g
        branch.eval()
        with torch.no_grad():
            out = [
                _centre(
                    branch(torch.from_numpy(np.ascontiguousarray(inputs[s : s + batch], dtype=np.float32))),
                    branch,
                    0,
                    False,
                )
                for s in range(0, len(inputs), batch)
            ]
        branch.train()
        return torch.cat(out).numpy()


def minibatches(n: int, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A random partition of ``range(n)`` into batches (the last short one dropped when it is tiny)."""
    order = rng.permutation(n)
    batches = [order[s : s + batch_size] for s in range(0, n, batch_size)]
    return [b for b in batches if len(b) >= max(2, batch_size // 4)]
