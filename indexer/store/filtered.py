"""Vector search restricted to a subset of ids (issue 27's date, folder and place filters).

The filter is applied inside the search, never by dropping hits of an unfiltered top k afterwards: ``k``
results come back whenever ``k`` images pass the filter.

* A subset of at most ``EXACT_SUBSET_MAX`` ids is scored exactly: its stored vectors are read in chunks
  (``reconstruct_present``; memory-mapped rows for ``ivf-pq-mmap``) and multiplied with the queries. The cost
  grows with the subset, not the collection: a filter keeping 1 % of a million photos reads 10,000 vectors
  (benchmarks/filtered_search.md).
* A larger subset is searched by the index itself with a depth scaled by the subset's share of the collection
  (``2·k·n/|subset|``), deepened ×4 until every query has ``k`` hits in the subset; an ANN index that cannot
  return that many (IVF lists not probed) ends in the exact scoring above, so the guarantee holds for every kind.

The FAISS kinds and ``ivf-pq-mmap`` search an ``allowed`` set with :func:`filtered_search`; a vector server, whose
stored vectors cost a round trip per chunk, with :func:`deepened_search` alone (each backend's ``search``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from indexer.store.backend import SearchResult

EXACT_SUBSET_MAX = 50_000
CHUNK = 8_192  # vectors read at once: 40 MB at 1280-d float32


class Searchable(Protocol):
    """A vector store searched without a filter (the deepening calls it with growing depths)."""

    def __len__(self) -> int: ...

    def search(self, queries: np.ndarray, k: int) -> list[SearchResult]: ...


class ExactlyReadable(Searchable, Protocol):
    """…whose stored vectors are cheap to read back by id (in RAM, or memory-mapped)."""

    def reconstruct_present(self, ids: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]: ...


def filtered_search(store: ExactlyReadable, queries: np.ndarray, k: int, allowed: np.ndarray) -> list[SearchResult]:
    """Best ``k`` hits per query row among the ids in ``allowed`` (any order, duplicates allowed)."""
    subset = np.unique(np.asarray(allowed, dtype=np.int64))
    if k <= 0 or len(subset) == 0 or len(store) == 0:
        return [SearchResult([], []) for _ in range(len(queries))]
    if len(subset) <= EXACT_SUBSET_MAX:
        return exact_subset_search(store, queries, k, subset)
    kept, complete = _deepening(store, queries, k, subset)
    # An ANN index that did not reach every vector: exact, to be sure.
    return kept if complete else exact_subset_search(store, queries, k, subset)


def deepened_search(store: Searchable, queries: np.ndarray, k: int, allowed: np.ndarray) -> list[SearchResult]:
    """:func:`filtered_search` for a store whose vectors are not read back (a vector server): the deepened index
    search only."""
    subset = np.unique(np.asarray(allowed, dtype=np.int64))
    if k <= 0 or len(subset) == 0 or len(store) == 0:
        return [SearchResult([], []) for _ in range(len(queries))]
    return _deepening(store, queries, k, subset)[0]


def exact_subset_search(store: ExactlyReadable, queries: np.ndarray, k: int, subset: np.ndarray) -> list[SearchResult]:
    """Exact inner products of the queries with the stored vectors of ``subset`` (sorted unique ids)."""
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    best_scores = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(subset), CHUNK):
        ids, matrix = store.reconstruct_present(subset[start : start + CHUNK])
        if not len(ids):
            continue
        scores = queries @ np.asarray(matrix, dtype=np.float32).T
        best_ids = np.concatenate([best_ids, np.broadcast_to(ids, scores.shape)], axis=1)
        best_scores = np.concatenate([best_scores, scores], axis=1)
        if best_scores.shape[1] > k:
            top = np.argpartition(-best_scores, k - 1, axis=1)[:, :k]
            best_ids = np.take_along_axis(best_ids, top, axis=1)
            best_scores = np.take_along_axis(best_scores, top, axis=1)
    results = []
    for row_ids, row_scores in zip(best_ids, best_scores, strict=True):
        order = np.lexsort((row_ids, -row_scores))  # best first; ties by id, as a stable answer
        results.append(SearchResult(row_ids[order].tolist(), row_scores[order].astype(float).tolist()))
    return results


def _deepening(store: Searchable, queries: np.ndarray, k: int, subset: np.ndarray) -> tuple[list[SearchResult], bool]:
    """The deepened search's hits in ``subset``, and whether every query got ``min(k, |subset|)`` of them."""
    total = len(store)
    depth = min(total, max(4 * k, math.ceil(2 * k * total / len(subset))))
    while True:
        found = store.search(queries, depth)
        kept = []
        for result in found:
            ids = np.asarray(result.ids, dtype=np.int64)
            inside = np.isin(ids, subset, assume_unique=False)
            kept.append(SearchResult(ids[inside][:k].tolist(), np.asarray(result.scores)[inside][:k].tolist()))
        if all(len(result.ids) >= min(k, len(subset)) for result in kept):
            return kept, True
        if depth >= total:
            return kept, False
        depth = min(total, depth * 4)
