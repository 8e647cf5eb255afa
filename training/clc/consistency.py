"""Cross-lingual consistency (SMALR, Burns et al., ECCV 2020, Sec. 3.4): a query is also put into the other
languages and the image scores of all versions are combined.

A query's versions are laid out in slots ``[query, translation into L₁, …, translation into Lₙ]`` (``L`` =
POLYGLOT_CLC_LANGUAGES). The slot of the query's own language, and any translation the translator could not
make, is empty. **CLC-A** averages the cosine scores of the present versions; against unit image vectors that is
the ranking of the mean of the versions' unit vectors, so it is one vector and one index search. **CLC-C**
combines the scores of all slots with a small MLP (``1+|L|`` inputs, 32 hidden units, ReLU; empty slots take the
query's own score). It is not linear, so it re-ranks the CLC-A search's best ``POLYGLOT_CLC_CANDIDATES`` images by
their exact per-version scores. Its weights are a tower-like checkpoint: ``config.json`` + ``model.safetensors``,
trained by ``polyglot clc fit`` (``training/clc/fit.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.unit import unit_rows

ClcMode = Literal["off", "average", "classifier"]
CLC_MODES: tuple[str, ...] = ("off", "average", "classifier")
HIDDEN = 32
WEIGHTS = "model.safetensors"


class ClcError(ValueError):
    """CLC cannot run as asked (no translator, a classifier for other languages); the message says why."""


@dataclass
class Versions:
    vectors: np.ndarray  # (n, 1+|L|, D) unit vectors; empty slots are zero
    present: np.ndarray  # (n, 1+|L|) bool: slot 0 (the query) always True

    def average(self) -> np.ndarray:
        """CLC-A: the unit mean of each query's present versions (= the mean of their cosine scores, ranked)."""
        return unit_rows(self.vectors.sum(axis=1)).astype(np.float32)  # empty slots are zero vectors

    def scores(self, candidates: np.ndarray) -> np.ndarray:
        """(n, C, 1+|L|) cosine scores of every slot against each query's candidate images ``(n, C, D)``; empty
        slots take the query's own score (the MLP always sees a full row)."""
        scores = np.einsum("nvd,ncd->ncv", self.vectors, candidates)
        return np.where(self.present[:, None, :], scores, scores[:, :, :1])


@dataclass
class ClcClassifier:
    """CLC-C's MLP in numpy: ``w2 · relu(W1 · s + b1) + b2`` over a candidate's slot scores ``s``."""

    languages: list[str]  # the translation targets, in slot order (slot 0 is the query itself)
    w1: np.ndarray  # (HIDDEN, 1+|L|)
    b1: np.ndarray  # (HIDDEN,)
    w2: np.ndarray  # (1, HIDDEN)
    b2: np.ndarray  # (1,)
    meta: dict[str, object]

    def __call__(self, scores: np.ndarray) -> np.ndarray:
        """``(..., 1+|L|)`` slot scores → ``(...)`` combined scores."""
        hidden = np.maximum(scores @ self.w1.T + self.b1, 0.0)
        return (hidden @ self.w2.T + self.b2)[..., 0]

    def state(self) -> dict[str, np.ndarray]:
        names = ("hidden.weight", "hidden.bias", "out.weight", "out.bias")
        return {name: np.ascontiguousarray(a, dtype=np.float32) for name, a in zip(names, self.arrays(), strict=True)}

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return self.w1, self.b1, self.w2, self.b2

    def save(self, folder: Path) -> None:
        from safetensors.numpy import save

        atomic_write_bytes(Path(folder) / WEIGHTS, save(self.state()))
        atomic_write_json(Path(folder) / "config.json", {**self.meta, "languages": self.languages, "hidden": HIDDEN})

    @classmethod
    def load(cls, folder: Path) -> ClcClassifier:
        from safetensors.numpy import load_file

        folder = Path(folder)
        if not (folder / "config.json").is_file() or not (folder / WEIGHTS).is_file():
            raise ClcError(
                f"{folder} is not a CLC classifier (config.json + {WEIGHTS}): train one with polyglot clc fit"
            )
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        state = load_file(str(folder / WEIGHTS))
        languages = [str(lang) for lang in config["languages"]]
        arrays = [state[name] for name in ("hidden.weight", "hidden.bias", "out.weight", "out.bias")]
        if arrays[0].shape != (HIDDEN, len(languages) + 1):
            raise ClcError(f"{folder}: weights of shape {arrays[0].shape} for {len(languages)} languages")
        meta = {k: v for k, v in config.items() if k not in ("languages", "hidden")}
        w1, b1, w2, b2 = arrays
        return cls(languages, w1, b1, w2, b2, meta)


def rerank(
    versions: Versions, classifier: ClcClassifier, candidate_ids: list[list[int]], candidates: np.ndarray
) -> tuple[list[list[int]], list[list[float]]]:
    """CLC-C over each query's candidates ``(n, C, D)`` (rows past a query's own ids are padding): ids best first
    and, as the user-facing score, their CLC-A score (cosine with the versions' unit mean; the classifier's output
    has no fixed scale)."""
    slot_scores = versions.scores(candidates)
    combined = classifier(slot_scores)
    shown = np.einsum("ncd,nd->nc", candidates, versions.average())  # what clc=average would show
    ids_out, scores_out = [], []
    for row, ids in enumerate(candidate_ids):
        order = np.argsort(-combined[row, : len(ids)], kind="stable")
        ids_out.append([ids[i] for i in order])
        scores_out.append([float(shown[row, i]) for i in order])
    return ids_out, scores_out
