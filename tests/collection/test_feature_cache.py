from __future__ import annotations

from pathlib import Path

import numpy as np

from indexer.feature_cache import FeatureCache, text_key


def test_compute_encodes_each_key_once_and_persists(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    table = {f"k{i}": rng.normal(size=4).astype(np.float32) for i in range(10)}
    keys = ["k1", "k2", "k1", "k3"]  # k1 twice: encoded once
    calls: list[list[str]] = []

    def encode(positions: list[int]) -> np.ndarray:
        calls.append([keys[p] for p in positions])
        return np.stack([table[keys[p]] for p in positions])

    cache = FeatureCache(tmp_path, "enc/with:odd name", dim=4)
    out = cache.compute(keys, encode, batch_size=2)
    np.testing.assert_array_equal(out, np.stack([table[k] for k in keys]))
    assert sorted(k for batch in calls for k in batch) == ["k1", "k2", "k3"]
    cache.close()

    # A new process (new object) finds them: nothing is encoded again.
    again = FeatureCache(tmp_path, "enc/with:odd name", dim=4)
    calls.clear()
    out2 = again.compute(["k3", "k2"], encode)
    assert calls == []
    np.testing.assert_array_equal(out2, np.stack([table["k3"], table["k2"]]))
    assert len(again) == 3


def test_progress_counts_every_row(tmp_path: Path) -> None:
    cache = FeatureCache(tmp_path, "e", dim=2)
    cache.put_many({"a": np.ones(2, np.float32)})
    seen: list[int] = []
    cache.compute(["a", "b", "c"], lambda pos: np.zeros((len(pos), 2), np.float32), progress=seen.append)
    assert sum(seen) == 3


def test_wrong_dimension_rows_are_ignored(tmp_path: Path) -> None:
    cache = FeatureCache(tmp_path, "e", dim=3)
    cache.put_many({"x": np.ones(5, np.float32)})
    assert cache.get_many(["x"]) == {}


def test_text_key_is_stable() -> None:
    assert text_key("un chien") == text_key("un chien") != text_key("un chat")
