"""Unit vectors: every space of the product compares by inner product of l2-normalised rows (= cosine)."""

from __future__ import annotations

import numpy as np


def unit_rows(rows: np.ndarray) -> np.ndarray:
    """Each row scaled to unit length, as ``torch.nn.functional.normalize`` (norms clamped at 1e-12, so zero rows
    stay zero)."""
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
