"""FAISS store: exact search against a numpy reference, approximate recall, ids, removal, persistence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.settings import Settings
from indexer.store.vectors import (
    PQ_MIN_VECTORS,
    SearchResult,
    VectorIndex,
    VectorIndexSettings,
    bytes_per_vector,
    choose_kind,
    pq_subquantizers,
)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def clustered(rng: np.random.Generator, n: int, dim: int, centres: np.ndarray) -> np.ndarray:
    # Image features form clusters; uniform noise on a sphere is the (unrealistic) worst case for IVF.
    return unit(centres[rng.integers(0, len(centres), n)] + 0.35 * rng.normal(size=(n, dim)))


def clustered_collection(seed: int, n: int, queries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vectors, queries, non-contiguous ids) drawn around 40 shared centres in 64-d."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, 64))
    data = clustered(rng, n, 64, centres)
    return data, clustered(rng, queries, 64, centres), np.arange(n, dtype=np.int64) * 7 + 3


def recall_at(results: list[SearchResult], want: np.ndarray, k: int) -> float:
    return float(np.mean([len(set(r.ids) & set(want[i].tolist())) / k for i, r in enumerate(results)]))


def brute_force(queries: np.ndarray, data: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    scores = queries @ data.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return ids[order], np.take_along_axis(scores, order, axis=1)


def test_exact_search_matches_numpy_reference() -> None:
    rng = np.random.default_rng(1)
    data = unit(rng.normal(size=(500, 32)))
    ids = rng.permutation(10_000)[:500].astype(np.int64)  # arbitrary, non-contiguous ids
    queries = unit(rng.normal(size=(20, 32)))
    index = VectorIndex.build(ids, data, "flat", VectorIndexSettings())
    results = index.search(queries, 10)
    want_ids, want_scores = brute_force(queries, data, ids, 10)
    for row, result in enumerate(results):
        assert result.ids == want_ids[row].tolist()
        np.testing.assert_allclose(result.scores, want_scores[row], rtol=1e-5, atol=1e-5)


def test_k_larger_than_collection_drops_padding() -> None:
    data = unit(np.eye(3, 8) + 0.1)
    index = VectorIndex.build([5, 6, 7], data, "flat", VectorIndexSettings())
    (result,) = index.search(data[:1], 10)
    assert sorted(result.ids) == [5, 6, 7] and -1 not in result.ids
    assert VectorIndex.create(8, "flat", VectorIndexSettings()).search(data[:1], 5)[0].ids == []


def test_pq_refine_ranks_by_exact_scores() -> None:
    """The shortlist comes from 4-bit codes, but every returned score is the exact inner product, and on
    clustered data the shortlist holds the exhaustive top 10."""
    data, queries, ids = clustered_collection(5, 3000, 100)
    index = VectorIndex.build(ids, data, "pq-refine", VectorIndexSettings())
    want_ids, want_scores = brute_force(queries, data, ids, 10)
    got = index.search(queries, 10)
    assert recall_at(got, want_ids, 10) >= 0.99
    for row, result in enumerate(got):
        exact = {int(i): float(s) for i, s in zip(want_ids[row], want_scores[row], strict=True)}
        for i, score in zip(result.ids, result.scores, strict=True):
            if i in exact:
                assert score == pytest.approx(exact[i], abs=1e-5)
    (everything,) = index.search(queries[:1], 5000)  # deeper than the collection: all of it, no padding
    assert len(everything.ids) == len(data) and min(everything.ids) >= 0


@pytest.mark.parametrize("kind", ["hnsw", "ivf-sq8"])
def test_approximate_recall_at_10(kind: str) -> None:
    data, queries, ids = clustered_collection(2, 6000, 200)
    want, _ = brute_force(queries, data, ids, 10)
    index = VectorIndex.build(ids, data, kind, VectorIndexSettings())
    recall = recall_at(index.search(queries, 10), want, 10)
    assert recall >= 0.95, f"{kind} recall@10 = {recall:.3f}"


@pytest.mark.parametrize("kind", ["flat", "pq-refine", "hnsw", "ivf-sq8"])
def test_remove_reconstruct_and_save_load(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    data = unit(rng.normal(size=(400, 16)))
    ids = np.arange(100, 500, dtype=np.int64)
    # pq-refine's codebooks need more training vectors than the 400 stored here.
    train = unit(rng.normal(size=(PQ_MIN_VECTORS, 16))) if kind in ("pq-refine", "ivf-sq8") else None
    index = VectorIndex.create(16, kind, VectorIndexSettings(), train_vectors=train)
    index.add(ids, data)
    assert index.remove([100, 101, 999]) == 2  # unknown ids are ignored
    assert len(index) == 398 and 100 not in index.ids().tolist()
    assert index.reconstruct(100) is None
    restored = index.reconstruct(250)
    assert restored is not None
    np.testing.assert_allclose(restored, data[150], atol=0.02 if kind == "ivf-sq8" else 1e-6)
    size = index.save(tmp_path / "v.faiss")
    assert size == (tmp_path / "v.faiss").stat().st_size
    loaded = VectorIndex.load(tmp_path / "v.faiss", kind, index.settings)
    assert sorted(loaded.ids().tolist()) == sorted(index.ids().tolist())
    assert loaded.search(data[200:201], 1)[0].ids == [300]
    assert loaded.search(data[200:201], 1)[0].scores[0] == pytest.approx(1.0, abs=0.02 if kind == "ivf-sq8" else 1e-5)
    assert not list(tmp_path.glob(".*.tmp"))  # atomic write leaves no temporary behind
    assert (tmp_path / "v.faiss").stat().st_mode & 0o777 == 0o644  # readable by a service running as another user


def test_duplicate_ids_and_wrong_dimension_are_refused() -> None:
    index = VectorIndex.build([1, 2], unit(np.ones((2, 4)) + np.eye(2, 4)), "flat", VectorIndexSettings())
    with pytest.raises(ValueError, match="duplicate"):
        index.add([2], unit(np.ones((1, 4))))
    with pytest.raises(ValueError, match="dimension 4"):
        index.search(np.ones((1, 5), dtype=np.float32), 1)


def test_kind_rule_and_memory_estimates() -> None:
    settings = VectorIndexSettings(flat_max=5, exact_max=10, hnsw_max=100)
    kinds = [choose_kind(n, settings) for n in (0, 5, 6, 10, 11, 100, 101)]
    assert kinds == ["flat", "flat", "pq-refine", "pq-refine", "hnsw", "hnsw", "ivf-pq-mmap"]
    assert choose_kind(5, VectorIndexSettings(kind="hnsw")) == "hnsw"
    assert choose_kind(10**6, VectorIndexSettings(kind="ivf-sq8")) == "ivf-sq8"  # forced kinds still apply
    assert choose_kind(PQ_MIN_VECTORS - 1, VectorIndexSettings(kind="ivf-pq-mmap")) == "flat"
    # Forced pq-refine waits for enough vectors to train its codebooks.
    assert choose_kind(PQ_MIN_VECTORS - 1, VectorIndexSettings(kind="pq-refine")) == "flat"
    assert choose_kind(PQ_MIN_VECTORS, VectorIndexSettings(kind="pq-refine")) == "pq-refine"
    assert [pq_subquantizers(d) for d in (1280, 384, 64, 18, 3)] == [320, 96, 16, 3, 1]
    assert bytes_per_vector("flat", 1280, settings) == 4 * 1280 + 16
    assert bytes_per_vector("pq-refine", 1280, settings) == 4 * 1280 + 160 + 16
    assert bytes_per_vector("ivf-sq8", 1280, settings) < bytes_per_vector("flat", 1280, settings) / 3
    assert bytes_per_vector("hnsw", 1280, settings) > bytes_per_vector("flat", 1280, settings)
    assert bytes_per_vector("ivf-pq-mmap", 1280, settings) < 300  # codes in RAM, vectors on disk


def test_kind_settings_are_read_with_the_indexer_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """POLYGLOT_INDEX_* is read where the edge builds Settings; the index library is handed the values."""
    monkeypatch.chdir(tmp_path)  # no .env
    monkeypatch.setenv("POLYGLOT_INDEX_KIND", "hnsw")
    monkeypatch.setenv("POLYGLOT_INDEX_HNSW_M", "16")
    settings = Settings()
    monkeypatch.delenv("POLYGLOT_INDEX_KIND")
    assert (settings.vector_index.kind, settings.vector_index.hnsw_m) == ("hnsw", 16)


def test_flat_file_size_matches_memory_estimate(tmp_path: Path) -> None:
    data = unit(np.random.default_rng(4).normal(size=(1000, 128)))
    index = VectorIndex.build(np.arange(1000), data, "flat", VectorIndexSettings())
    per_image = index.save(tmp_path / "v.faiss") / 1000
    assert abs(per_image - bytes_per_vector("flat", 128, VectorIndexSettings())) < 32


def test_saving_and_loading_never_hold_a_serialised_copy_of_the_index() -> None:
    """A 100-MB flat index is written and read streamed: saving adds (next to) nothing to the process's peak
    memory, loading only the index itself. Serialising into bytes took 1.8 GB more to save a 1-GB index and three
    times its size to load it (the bytes, FAISS's copy of them, the index). Each step runs in a fresh process
    (benchmarks/vector_file_memory.py, on 20,000 vectors)."""
    import json
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "vector_file_memory.py"
    done = subprocess.run(
        [sys.executable, str(script), "--photos", "20000"], capture_output=True, text=True, check=True
    )
    steps = {step["step"]: step for step in map(json.loads, done.stdout.splitlines()[:2])}
    size = 20_000 * 1280 * 4
    assert steps["save"]["peak_growth_bytes"] < 0.15 * size
    assert steps["save"]["file_bytes"] > size
    assert steps["load"]["peak_growth_bytes"] < 1.3 * size
    assert steps["load"]["vectors"] == 20_000


def test_a_write_that_finds_no_space_midway_is_a_disk_full_error_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index is streamed into the file by FAISS, in chunks: a chunk that finds no space still ends as the
    index's one clear disk-full error, with the old file intact and no temporary file left."""
    import errno
    import os

    from indexer.store.failures import DiskFullError

    rng = np.random.default_rng(0)
    index = VectorIndex.create(64, "flat", VectorIndexSettings())
    index.add(np.arange(5_000), unit(rng.normal(size=(5_000, 64))))
    path = tmp_path / "vectors.faiss"
    index.save(path)
    good = path.read_bytes()
    index.add(np.arange(5_000, 6_000), unit(rng.normal(size=(1_000, 64))))

    real_fdopen = os.fdopen

    class FullDisk:
        def __init__(self, handle: object) -> None:
            self.handle, self.written = handle, 0

        def __getattr__(self, name: str) -> object:
            return getattr(self.handle, name)

        def __enter__(self) -> FullDisk:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()  # type: ignore[attr-defined]

        def write(self, data: bytes) -> int:
            self.written += len(data)
            if self.written > 100_000:  # FAISS writes in chunks: this one is past the free space
                raise OSError(errno.ENOSPC, "No space left on device")
            return self.handle.write(data)  # type: ignore[attr-defined, no-any-return]

    monkeypatch.setattr("indexer.atomic.os.fdopen", lambda *a, **k: FullDisk(real_fdopen(*a, **k)))
    with pytest.raises(DiskFullError, match="no space left"):
        index.save(path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["vectors.faiss"]  # no temporary file left behind
    monkeypatch.undo()
    assert len(VectorIndex.load(path, "flat", VectorIndexSettings())) == 5_000
