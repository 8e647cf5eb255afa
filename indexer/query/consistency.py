"""Cross-lingual consistency (CLC; SMALR, Burns et al., ECCV 2020, Sec. 3.4) as the query pipeline sees it: the
modes ``/search?clc=`` takes, a query's versions, and the interfaces of the parts that make them.

A query's versions are laid out in slots ``[query, translation into L₁, …, translation into Lₙ]`` (``L`` =
POLYGLOT_CLC_LANGUAGES). The slot of the query's own language, and any translation the translator could not make,
is empty. **CLC-A** averages the cosine scores of the present versions; against unit image vectors that is the
ranking of the mean of the versions' unit vectors, so it is one vector and one index search. **CLC-C** re-ranks
that search's best candidates with a classifier over the per-version scores.

The translators and the classifier are research parts: the lab registers them with the encoder factory
(:func:`indexer.encoders.factory.register_query_translator`, :func:`~indexer.encoders.factory.register_clc_classifier`;
``training/translation``, ``training/clc``). Without them ``clc`` is off, and asking for it is a clear 400.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from indexer.unit import unit_rows

ClcMode = Literal["off", "average", "classifier"]
CLC_MODES: tuple[str, ...] = ("off", "average", "classifier")


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
        slots take the query's own score (a classifier always sees a full row)."""
        scores = np.einsum("nvd,ncd->ncv", self.vectors, candidates)
        return np.where(self.present[:, None, :], scores, scores[:, :, :1])


@runtime_checkable
class QueryTranslator(Protocol):
    name: str  # reported by /search and polyglot evaluate ("gloss", "retrieval", "mt:argos", "parallel")

    def translate(self, texts: Sequence[str], sources: Sequence[str | None], target: str) -> list[str | None]:
        """One translation (or None) per text into ``target``; texts already in ``target`` are not asked."""
        ...


class ClcReranker(Protocol):
    """CLC-C: re-ranks each query's candidates by its versions' scores."""

    languages: list[str]  # the translation targets, in slot order (slot 0 is the query itself)

    def rerank(
        self, versions: Versions, candidate_ids: list[list[int]], candidates: np.ndarray
    ) -> tuple[list[list[int]], list[list[float]]]:
        """Ids best first and the score shown for each (see :func:`training.clc.consistency.rerank`)."""
        ...
