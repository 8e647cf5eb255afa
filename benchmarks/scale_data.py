"""Collections of any size for ``index_scale.py``: the real dev vectors plus synthetic ones drawn to match them.

Synthetic vectors: a Gaussian mixture fitted on the real image vectors (the 6,993 photos of the shared data, in
the index's image space: centred + l2). k-means (16 clusters) gives the components' means and weights (cluster
sizes); all components share the pooled within-cluster covariance (full 1,280 x 1,280, eigen-decomposed:
6,993 residuals estimate it well enough). A vector is ``mean_c + V·(sqrt(eigenvalues) * z)``, ``z ~ N(0, I)``,
l2-normalised like the real ones. A collection of ``n`` holds the real vectors first, then ``n - 6,993`` synthetic
ones. Why a mixture: real photos cluster (by subject), and a single Gaussian (same mean and covariance) has no
clusters, which makes it far harder for an inverted file than real photos are; with 16 components the mixture is
still a little harder than the real vectors (``--calibrate`` measures the three side by side), so the recall
measured on it is, if anything, pessimistic.

Queries: dev-split captions embedded by the shipped mUSE tower (as ``/search`` embeds them), so the exact
neighbours are real photos as often as the text matches them. Ground truth: exact inner-product top k over the
whole collection, computed while it is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np

from indexer.settings import Settings
from indexer.store.sidecar import Sidecar
from indexer.store.vector_files import load_vectors

CHUNK = 50_000


def real_vectors(index_dir: Path) -> np.ndarray:
    """The vectors of the index in ``index_dir`` (any kind), in id order."""
    sidecar = Sidecar.load(index_dir)
    vectors = load_vectors(index_dir, sidecar, Settings().vector_index) if sidecar else None
    if vectors is None or len(vectors) == 0:
        raise SystemExit(f"no index in {index_dir}: run `polyglot index add ../shared/data/m30k-f8k/images` first")
    return vectors.reconstruct_many(vectors.ids())


def query_vectors(count: int, cache: Path) -> np.ndarray:
    """``count`` dev captions embedded by the shipped mUSE tower (cached: loading the encoder takes seconds)."""
    path = cache / f"queries-{count}.npy"
    if path.exists():
        return np.load(path)
    import json
    import random

    from index_kinds import DATA

    from indexer.query import load_text_tower
    from training.asset_paths import research_tower_path

    embedder = load_text_tower(Settings(), research_tower_path("tower-muse"))
    dev = set((DATA / "splits" / "dev.txt").read_text(encoding="utf-8").split())
    with (DATA / "captions.jsonl").open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    texts = [row["text"] for row in rows if row["image"] in dev and embedder.encoder.supports(row["lang"])]
    random.Random(0).shuffle(texts)
    texts = texts[:count]
    queries = np.concatenate([embedder.embed(texts[s : s + 256]) for s in range(0, len(texts), 256)])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, queries.astype(np.float32))
    return queries.astype(np.float32)


class GaussianModel:
    """Mean + full covariance of the real vectors (one component); only for the calibration."""

    def __init__(self, real: np.ndarray) -> None:
        real = real.astype(np.float64)
        self.means = real.mean(axis=0, keepdims=True)
        self.weights = np.ones(1)
        self._fit_spread(real - self.means)

    def _fit_spread(self, residuals: np.ndarray) -> None:
        eigenvalues, basis = np.linalg.eigh(np.cov(residuals, rowvar=False))
        self.basis_t = basis.T.astype(np.float32)
        self.scale = np.sqrt(np.clip(eigenvalues, 0, None)).astype(np.float32)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        component = rng.choice(len(self.weights), n, p=self.weights)
        z = rng.standard_normal((n, self.basis_t.shape[0]), dtype=np.float32)
        x = (z * self.scale) @ self.basis_t + self.means[component].astype(np.float32)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class MixtureModel(GaussianModel):
    """k-means means and weights + the pooled within-cluster covariance (see the module docstring)."""

    def __init__(self, real: np.ndarray, components: int = 16) -> None:
        kmeans = faiss.Kmeans(real.shape[1], components, niter=20, seed=1)
        kmeans.train(np.ascontiguousarray(real, dtype=np.float32))
        _, assigned = kmeans.index.search(np.ascontiguousarray(real, dtype=np.float32), 1)
        assigned = assigned[:, 0]
        real = real.astype(np.float64)
        self.means = np.stack([real[assigned == c].mean(axis=0) for c in range(components)])
        self.weights = np.bincount(assigned, minlength=components) / len(real)
        self._fit_spread(real - self.means[assigned])


def collection_chunks(real: np.ndarray, model: GaussianModel, n: int, seed: int = 0) -> Iterator[np.ndarray]:
    """The ``n`` vectors of a collection: the real ones, then synthetic ones, ``CHUNK`` rows at a time."""
    rng = np.random.default_rng(seed)
    head = real[:n]
    for start in range(0, len(head), CHUNK):
        yield head[start : start + CHUNK]
    left = n - len(head)
    while left > 0:
        size = min(CHUNK, left)
        yield model.sample(size, rng)
        left -= size


def write_collection(
    path: Path, real: np.ndarray, model: GaussianModel, n: int, queries: np.ndarray, k: int
) -> np.ndarray:
    """Write the collection of ``n`` (float32 rows) to ``path``; returns the exact top-``k`` rows per query."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_rows = np.full((len(queries), k), -1, dtype=np.int64)
    first = 0
    with path.open("wb") as handle:
        for chunk in collection_chunks(real, model, n):
            handle.write(np.ascontiguousarray(chunk, dtype=np.float32).tobytes())
            scores = queries @ chunk.T
            scores_all = np.concatenate([best_scores, scores], axis=1)
            rows_all = np.concatenate([best_rows, first + np.arange(len(chunk))[None, :].repeat(len(queries), 0)], 1)
            top = np.argpartition(-scores_all, k - 1, axis=1)[:, :k]
            best_scores = np.take_along_axis(scores_all, top, axis=1)
            best_rows = np.take_along_axis(rows_all, top, axis=1)
            first += len(chunk)
    order = np.argsort(-best_scores, axis=1, kind="stable")
    return np.take_along_axis(best_rows, order, axis=1)


def open_collection(path: Path, dim: int) -> np.ndarray:
    return np.memmap(path, dtype=np.float32, mode="r").reshape(-1, dim)
