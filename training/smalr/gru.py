"""A GRU forward pass in numpy, equal to ``torch.nn.GRU`` (one layer, batch_first) in eval mode.

Query batches are a few short sentences: numpy over views of the weights avoids torch's per-call overhead
(see :meth:`indexer.tower.TextTower.embed`). Gate order and equations are torch's:
``r = σ(W_ir x + b_ir + W_hr h + b_hr)``, ``z = σ(W_iz x + b_iz + W_hz h + b_hz)``,
``n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))``, ``h' = (1 - z) ⊙ n + z ⊙ h``.
"""

from __future__ import annotations

import numpy as np


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (np.tanh(0.5 * x) + 1.0)  # overflow-free


def gru_last_hidden(
    x: np.ndarray, lengths: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray
) -> np.ndarray:
    """``x`` (n, T, d) padded inputs, ``lengths`` (n,) → the hidden state after each row's last real step (n, h)."""
    n, steps, _ = x.shape
    hidden = w_hh.shape[1]
    inputs = x @ w_ih.T + b_ih  # every step's input gates at once: (n, T, 3h)
    h = np.zeros((n, hidden), dtype=np.float32)
    last = np.zeros((n, hidden), dtype=np.float32)
    for t in range(steps):
        gates_h = h @ w_hh.T + b_hh
        gates_x = inputs[:, t]
        r = _sigmoid(gates_x[:, :hidden] + gates_h[:, :hidden])
        z = _sigmoid(gates_x[:, hidden : 2 * hidden] + gates_h[:, hidden : 2 * hidden])
        candidate = np.tanh(gates_x[:, 2 * hidden :] + r * gates_h[:, 2 * hidden :])
        h = (1.0 - z) * candidate + z * h
        done = lengths == t + 1
        last[done] = h[done]
    return last
