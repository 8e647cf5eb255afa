"""CLC-C, cross-lingual consistency's classifier (SMALR, Burns et al., ECCV 2020, Sec. 3.4), at query time.

It combines the scores of all of a query's version slots (:class:`indexer.query.consistency.Versions`) with a small
MLP (``1+|L|`` inputs, 32 hidden units, ReLU; empty slots take the query's own score). It is not linear, so it
re-ranks the CLC-A search's best ``POLYGLOT_CLC_CANDIDATES`` images by their exact per-version scores. Its weights
are a tower-like checkpoint: ``config.json`` + ``model.safetensors``, trained by ``polyglot clc fit``
(``training/clc/fit.py``); the lab registers its loader with the encoder factory (:mod:`training.plugin`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.query.consistency import CLC_MODES, ClcError, ClcMode, Versions

HIDDEN = 32
WEIGHTS = "model.safetensors"


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

    def rerank(
        self, versions: Versions, candidate_ids: list[list[int]], candidates: np.ndarray
    ) -> tuple[list[list[int]], list[list[float]]]:
        return rerank(versions, self, candidate_ids, candidates)

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


__all__ = ["CLC_MODES", "HIDDEN", "WEIGHTS", "ClcClassifier", "ClcError", "ClcMode", "Versions", "rerank"]
