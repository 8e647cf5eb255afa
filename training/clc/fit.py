"""Train CLC-C (SMALR Sec. 3.4): the MLP that combines a query's per-language scores, on a held-out part of the
train split, full batch (no minibatches), with the bidirectional triplet loss of :mod:`training.losses.clc_triplet`.

The captions of the held-out photos go through the served query pipeline (:meth:`QueryPipeline.clc_versions`:
the same translator and towers as ``/search``); their slot scores against the photos are the MLP's inputs. The
photos are split again: the MLP is fitted on 80 % and the iteration kept is the one with the best mean t2i
recall on the other 20 % (the paper trains 30 iterations; that is the default maximum).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from indexer.query import QueryPipeline
from training.clc.consistency import HIDDEN, ClcClassifier, Versions
from training.data.prepared import PreparedSplit
from training.evaluation.retrieval_metrics import KS
from training.losses.clc_triplet import clc_triplet_loss
from training.translation.parallel import ParallelTranslator


@dataclass
class ClcData:
    scores: np.ndarray  # (n_texts, n_images, slots) per-version scores, empty slots filled with the query's
    present: np.ndarray  # (n_texts, slots)
    truth: np.ndarray  # (n_texts,) image column


def parallel_translator(split: PreparedSplit) -> ParallelTranslator:
    """The split's parallel captions as perfect translations (evaluation and fitting with ``--translator parallel``)."""
    sources = split.caption_source if split.caption_source is not None else np.full(len(split.caption_text), "")
    rows = zip(
        (split.images[i] for i in split.caption_image),
        split.caption_lang.tolist(),
        split.caption_text,
        sources.tolist(),
        strict=True,
    )
    return ParallelTranslator(rows)


def clc_versions(pipeline: QueryPipeline, texts: list[str], langs: list[str | None], batch: int = 1024) -> Versions:
    parts = [pipeline.clc_versions(texts[i : i + batch], langs[i : i + batch]) for i in range(0, len(texts), batch)]
    return Versions(np.concatenate([p.vectors for p in parts]), np.concatenate([p.present for p in parts]))


def slot_scores(pipeline: QueryPipeline, split: PreparedSplit, rows: np.ndarray, images: np.ndarray) -> ClcData:
    """Scores of the captions ``rows`` against the photos ``images`` (positions into the split)."""
    column = {int(image): c for c, image in enumerate(images)}
    versions = clc_versions(pipeline, [split.caption_text[i] for i in rows], split.caption_lang[rows].tolist())
    vectors = pipeline.models.image_space.apply(split.image_features[images])
    scores = np.einsum("nvd,md->nmv", versions.vectors, vectors)
    scores = np.where(versions.present[:, None, :], scores, scores[:, :, :1]).astype(np.float32)
    truth = np.array([column[int(split.caption_image[i])] for i in rows])
    return ClcData(scores, versions.present, truth)


class ClcMLP(nn.Module):
    def __init__(self, inputs: int) -> None:
        super().__init__()
        self.hidden = nn.Linear(inputs, HIDDEN)
        self.out = nn.Linear(HIDDEN, 1)
        # "All parameters are initialized with uniform weight": positive uniform weights and zero biases, so the
        # untrained MLP ranks like CLC-A (a positive combination of the slot scores).
        nn.init.uniform_(self.hidden.weight, 0.0, 2.0 / inputs)
        nn.init.uniform_(self.out.weight, 0.0, 2.0 / HIDDEN)
        nn.init.zeros_(self.hidden.bias)
        nn.init.zeros_(self.out.bias)

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.hidden(scores)))[..., 0]


def mean_recall(scores: np.ndarray, truth: np.ndarray) -> float:
    """Mean t2i R@1/5/10 of a (texts × images) score matrix."""
    own = scores[np.arange(len(truth)), truth]
    rank = (scores > own[:, None]).sum(axis=1)
    return float(np.mean([(rank < k).mean() for k in KS]))


def fit_classifier(
    fit: ClcData, val: ClcData, languages: list[str], iterations: int = 30, lr: float = 0.01, seed: int = 0
) -> tuple[ClcClassifier, dict[str, float | int]]:
    torch.manual_seed(seed)
    model = ClcMLP(fit.scores.shape[2])
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    x, truth = torch.from_numpy(fit.scores), torch.from_numpy(fit.truth)
    x_val = torch.from_numpy(val.scores)

    def val_recall() -> float:
        with torch.no_grad():
            return mean_recall(model(x_val).numpy(), val.truth)

    best, best_state, best_iteration = val_recall(), {k: v.clone() for k, v in model.state_dict().items()}, 0
    for iteration in tqdm(range(1, iterations + 1), desc="CLC-C", unit="iteration"):
        optimizer.zero_grad()
        loss = clc_triplet_loss(model(x), truth)
        loss.backward()
        optimizer.step()
        recall = val_recall()
        if recall > best:
            best, best_state, best_iteration = recall, {k: v.clone() for k, v in model.state_dict().items()}, iteration
    model.load_state_dict(best_state)
    arrays = [
        p.detach().numpy().copy() for p in (model.hidden.weight, model.hidden.bias, model.out.weight, model.out.bias)
    ]
    average = (val.scores * val.present[:, None, :]).sum(axis=2) / val.present.sum(axis=1)[:, None]
    report: dict[str, float | int] = {
        "val_mean_recall_query": mean_recall(val.scores[:, :, 0], val.truth),
        "val_mean_recall_average": mean_recall(average, val.truth),
        "val_mean_recall_classifier": best,
        "iteration": best_iteration,
        "iterations": iterations,
        "lr": lr,
        "fit_queries": len(fit.truth),
        "val_queries": len(val.truth),
    }
    w1, b1, w2, b2 = arrays
    return ClcClassifier(languages, w1, b1, w2, b2, {"fit": report}), report
