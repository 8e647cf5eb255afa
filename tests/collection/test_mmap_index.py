"""ivf-pq-mmap on small data: recall against exact search, exact scores, memory-mapped rows, adds and deletes
that survive reopening, another process's appends, torn tails of a crashed append."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_vectors import brute_force, clustered_collection, recall_at

from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.mmap_index import STATE_NAME, MmapIvfIndex
from indexer.store.row_file import DTYPES, IDS_NAME
from indexer.store.vector_files import MmapBuilder

SETTINGS = VectorIndexSettings(mmap_pq_dims=2, mmap_snapshot_rows=50)


def build(folder: Path, ids: np.ndarray, data: np.ndarray, settings: VectorIndexSettings = SETTINGS) -> MmapIvfIndex:
    builder = MmapBuilder(folder, data.shape[1], settings)
    for start in range(0, len(ids), 700):  # streamed in chunks, as a rebuild does
        builder.append(ids[start : start + 700], data[start : start + 700])
    return builder.finish()


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_recall_against_exact_and_exact_scores(tmp_path: Path, dtype: str) -> None:
    data, queries, ids = clustered_collection(seed=3, n=3000, queries=50)
    settings = SETTINGS.model_copy(update={"mmap_dtype": dtype})
    index = build(tmp_path, ids, data, settings)
    assert index.codes.nlist == min(round(2 * np.sqrt(3000)), 3000 // 39) and len(index) == 3000
    want_ids, _ = brute_force(queries, data, ids, 10)
    results = index.search(queries, 10)
    assert recall_at(results, want_ids, 10) >= 0.95
    stored = data.astype(dtype).astype(np.float32)
    row_of = {int(i): n for n, i in enumerate(ids)}
    for query, result in zip(queries, results, strict=True):
        # Re-ranked on the full vectors: the scores are the inner products with the stored rows.
        np.testing.assert_allclose(result.scores, [stored[row_of[i]] @ query for i in result.ids], atol=1e-5)
        assert result.scores == sorted(result.scores, reverse=True)


def test_rows_are_memory_mapped_and_reopen_gives_the_same_answers(tmp_path: Path) -> None:
    data, queries, ids = clustered_collection(seed=4, n=1500, queries=10)
    index = build(tmp_path, ids, data)
    before = [r.ids for r in index.search(queries, 5)]
    reopened = MmapIvfIndex.open(index.folder, SETTINGS)
    assert isinstance(reopened.rows.vectors, np.memmap)  # the full vectors are not loaded into RAM
    assert [r.ids for r in reopened.search(queries, 5)] == before
    # RAM: codes + ids, a fraction of the float vectors the file holds.
    assert reopened.resident_bytes() < 0.5 * data.nbytes
    np.testing.assert_allclose(reopened.reconstruct(int(ids[7])), data[7], atol=1e-6)  # type: ignore[arg-type]
    assert reopened.reconstruct(-5) is None


def test_add_and_delete_without_rebuild_survive_reopening(tmp_path: Path) -> None:
    data, _, ids = clustered_collection(seed=5, n=1600, queries=5)
    index = build(tmp_path, ids[:1000], data[:1000])
    state_before = (index.folder / STATE_NAME).read_text()
    index.add(ids[1000:1010], data[1000:1010])  # a small tail: no snapshot, encoded again on open
    index.commit()
    assert (index.folder / STATE_NAME).read_text() == state_before
    assert index.search(data[1003], 1)[0].ids == [int(ids[1003])]
    assert index.remove([int(ids[3]), int(ids[1005]), 999_999]) == 2
    with pytest.raises(ValueError, match="duplicate"):
        index.add(ids[:1], data[:1])
    reopened = MmapIvfIndex.open(index.folder, SETTINGS)
    assert len(reopened) == 1008
    assert reopened.search(data[1003], 1)[0].ids == [int(ids[1003])]
    assert int(ids[3]) not in reopened.search(data[3], 20)[0].ids
    assert int(ids[1005]) not in reopened.search(data[1005], 20)[0].ids
    np.testing.assert_array_equal(reopened.ids(), np.sort(np.setdiff1d(ids[:1010], [ids[3], ids[1005]])))
    reopened.add(ids[1010:1100], data[1010:1100])  # past snapshot_rows: the codes are written again
    reopened.commit()
    assert reopened.codes_rows == 1100 and len(list(reopened.folder.glob("codes-*.faiss"))) == 1
    again = MmapIvfIndex.open(index.folder, SETTINGS)
    assert len(again) == 1098 and int(ids[3]) not in again.search(data[3], 20)[0].ids


def test_catch_up_takes_in_another_writers_rows_and_deletes(tmp_path: Path) -> None:
    data, _, ids = clustered_collection(seed=6, n=1200, queries=1)
    writer = build(tmp_path, ids[:1000], data[:1000])
    reader = MmapIvfIndex.open(writer.folder, SETTINGS)
    writer.add(ids[1000:1020], data[1000:1020])
    writer.remove([int(ids[0])])
    reader.catch_up()
    assert len(reader) == 1019
    assert reader.search(data[1010], 1)[0].ids == [int(ids[1010])]
    assert int(ids[0]) not in reader.search(data[0], 20)[0].ids


def test_a_torn_append_is_ignored_then_cut(tmp_path: Path) -> None:
    data, _, ids = clustered_collection(seed=7, n=1100, queries=1)
    index = build(tmp_path, ids[:1000], data[:1000])
    with (index.folder / DTYPES["float32"]).open("ab") as handle:  # a vector written, its id never was
        handle.write(data[1000].tobytes()[:100])
    reopened = MmapIvfIndex.open(index.folder, SETTINGS)
    assert reopened.rows.n_rows == 1000
    reopened.add(ids[1000:1002], data[1000:1002])
    assert (index.folder / DTYPES["float32"]).stat().st_size == 1002 * data.shape[1] * 4
    assert (index.folder / IDS_NAME).stat().st_size == 1002 * 8
    assert MmapIvfIndex.open(index.folder, SETTINGS).search(data[1001], 1)[0].ids == [int(ids[1001])]
