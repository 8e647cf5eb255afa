"""A linear alignment of two languages' sentence embeddings (CCA / PCCA), as ``polyglot train --method pcca``
saves it, read back for serving caption→caption search (:mod:`indexer.captions.cross_lingual`).

``F(x) = (x − mean_x) W`` maps language x (the first of ``langs``) and ``G(y) = (y − mean_y) V`` language y into
one L-dimensional space where a caption and its translation are close (Rotman et al. 2018, §3.2: no image at
query time). A folder holds ``alignment.json`` (method, languages, text encoder, dimension, training report) and
``alignment.safetensors`` (``mean_x``, ``mean_y``, ``w``, ``v``, ``correlations``). The deep variants
(``dcca-noi``, ``dpcca-*``) are research models (measured worse than PCCA, docs/results.md round 6) and are not
served.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load as load_numpy
from safetensors.numpy import save as save_numpy

from indexer.atomic import atomic_write_bytes, atomic_write_json

CONFIG_NAME, WEIGHTS_NAME = "alignment.json", "alignment.safetensors"
LINEAR_METHODS = ("raw", "cca", "pcca")


class AlignmentError(ValueError):
    """An alignment folder that cannot be served (missing, unreadable, a deep variant); the message says why."""


@dataclass
class LinearAlignment:
    """Two linear maps into one L-dimensional space: ``F(x) = (x − mean_x) W``, ``G(y) = (y − mean_y) V``."""

    mean_x: np.ndarray
    mean_y: np.ndarray
    w: np.ndarray  # (D_x, L)
    v: np.ndarray  # (D_y, L)
    correlations: np.ndarray  # (L,) canonical (or partial canonical) correlations on the training data

    def project_x(self, x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=np.float64) - self.mean_x) @ self.w).astype(np.float32)

    def project_y(self, y: np.ndarray) -> np.ndarray:
        return ((np.asarray(y, dtype=np.float64) - self.mean_y) @ self.v).astype(np.float32)

    def tensors(self) -> dict[str, np.ndarray]:
        return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in asdict(self).items()}

    @classmethod
    def from_tensors(cls, tensors: dict[str, np.ndarray]) -> LinearAlignment:
        return cls(**{k: tensors[k].astype(np.float64) for k in ("mean_x", "mean_y", "w", "v", "correlations")})


def save_linear(folder: Path, linear: LinearAlignment, meta: dict[str, Any]) -> None:
    """Write the weights, then the config (atomically each): a reader never sees a config without its weights."""
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / WEIGHTS_NAME, save_numpy(linear.tensors()))
    atomic_write_json(folder / CONFIG_NAME, meta)


class CaptionAlignment:
    """A served linear alignment: ``project(lang, sentence_embeddings)`` into the shared space."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        try:
            self.meta: dict[str, Any] = json.loads((self.folder / CONFIG_NAME).read_text(encoding="utf-8"))
            weights = (self.folder / WEIGHTS_NAME).read_bytes()
        except (OSError, ValueError) as exc:
            raise AlignmentError(f"cannot read the caption alignment in {self.folder}: {exc}") from None
        method = self.meta.get("method")
        if method not in LINEAR_METHODS:
            raise AlignmentError(
                f"{self.folder} holds a {method!r} alignment; only {', '.join(LINEAR_METHODS)} are served "
                "(train one with `polyglot train --method pcca --langs x,y`)"
            )
        langs = self.meta.get("langs")
        if not (isinstance(langs, list) and len(langs) == 2 and langs[0] != langs[1]):
            raise AlignmentError(f"{self.folder}: 'langs' must name two languages, got {langs!r}")
        self.langs: tuple[str, str] = (str(langs[0]), str(langs[1]))
        self.text_encoder = str(self.meta.get("text_encoder", ""))
        self.method = str(method)
        try:
            self.linear = LinearAlignment.from_tensors(load_numpy(weights))
        except (KeyError, ValueError, OSError) as exc:
            raise AlignmentError(f"{self.folder}: unreadable weights ({exc})") from None
        # Cached caption vectors are keyed by it: retraining the alignment invalidates them.
        self.fingerprint = hashlib.sha256(weights).hexdigest()[:16]

    @property
    def dim(self) -> int:
        return int(self.linear.w.shape[1])

    @property
    def input_dim(self) -> int:
        return int(self.linear.w.shape[0])

    @property
    def name(self) -> str:
        return f"{self.method}:{self.langs[0]}-{self.langs[1]}"

    def project(self, lang: str, sentences: np.ndarray) -> np.ndarray:
        """Sentence embeddings of ``lang`` (one of ``langs``) → the shared space (not normalised)."""
        if lang == self.langs[0]:
            return self.linear.project_x(sentences)
        if lang == self.langs[1]:
            return self.linear.project_y(sentences)
        raise ValueError(f"the alignment {self.name} does not map {lang!r}")
