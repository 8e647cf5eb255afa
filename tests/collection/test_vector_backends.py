"""One contract for every place the vectors can live: the FAISS kinds and the Milvus server (a real server process,
tests/cluster_fixtures.py). A new backend is added by adding a ``BACKENDS`` entry and passing these tests.

Two levels: the vector store itself (ids, duplicates, deletes, reconstruct, top-k against exact search on 1,500
clustered vectors) and ``ImageIndex`` on top of it (the interface the CLI and the service use: add, search,
remove, reopen, rebuild — ids always those of the SQL rows).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FakeImageEncoder, write_random_images
from test_collection import assert_consistent, open_index

from indexer.settings import Settings
from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.milvus_vectors import MilvusVectors
from indexer.store.vector_files import MmapBuilder
from indexer.store.vectors import VectorIndex

pytest_plugins = ("cluster_fixtures",)  # one Milvus server for the whole session

# name → (VectorIndexSettings fields, least recall@10 against brute force): 0.99 for the exact kinds; the
# approximate ones a margin under what they measured on this data (printed with -s).
BACKENDS: dict[str, tuple[dict[str, Any], float]] = {
    "faiss-flat": ({"kind": "flat"}, 0.99),
    "faiss-pq-refine": ({"kind": "pq-refine", "refine_factor": 50}, 0.95),
    "faiss-hnsw": ({"kind": "hnsw"}, 0.95),
    "faiss-ivf-pq-mmap": ({"kind": "ivf-pq-mmap", "mmap_rerank": 50}, 0.95),
    "milvus-flat": ({"backend": "milvus", "milvus_index": "flat"}, 0.99),
    "milvus-hnsw": ({"backend": "milvus", "milvus_index": "hnsw"}, 0.95),
}


def backend_settings(name: str, request: pytest.FixtureRequest) -> VectorIndexSettings:
    fields, _ = BACKENDS[name]
    if fields.get("backend") == "milvus":
        uri = request.getfixturevalue("milvus_uri")
        fields = {**fields, "milvus_uri": uri, "milvus_collection": f"t{uuid.uuid4().hex[:12]}"}
    return VectorIndexSettings(**fields)


def build_store(settings: VectorIndexSettings, folder: Path, ids: np.ndarray, vectors: np.ndarray) -> Any:
    """The backend's vector store holding ``vectors`` under ``ids`` (as a rebuild would make it)."""
    if settings.backend == "milvus":
        store = MilvusVectors.new_generation(vectors.shape[1], settings)
        store.add(ids, vectors)
        return store
    if settings.kind == "ivf-pq-mmap":
        builder = MmapBuilder(folder, vectors.shape[1], settings)
        builder.append(ids, vectors)
        return builder.finish()
    return VectorIndex.build(ids, vectors, settings.kind, settings)


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 30 centres (photo features cluster; uniform noise is the worst case for ANN)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(30, dim))
    points = centres[rng.integers(0, 30, n)] + 0.5 * rng.normal(size=(n, dim))
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def recall_at(k: int, store: Any, ids: np.ndarray, vectors: np.ndarray, queries: np.ndarray) -> float:
    exact = ids[np.argsort(-(queries @ vectors.T), axis=1)[:, :k]]
    found = store.search(queries, k)
    return float(np.mean([len(set(r.ids) & set(e.tolist())) / k for r, e in zip(found, exact, strict=True)]))


@pytest.mark.parametrize("name", list(BACKENDS))
def test_vector_store_contract(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    settings = backend_settings(name, request)
    vectors = clustered(1_500, 32)
    ids = np.arange(10, 10 + 3 * len(vectors), 3, dtype=np.int64)  # sparse ids, like SQL keys after deletes
    store = build_store(settings, tmp_path, ids, vectors)
    try:
        assert len(store) == len(ids) and store.ids().tolist() == ids.tolist()
        queries = clustered(50, 32, seed=1)
        recall = recall_at(10, store, ids, vectors, queries)
        print(f"{name}: recall@10 {recall:.3f}")
        assert recall >= BACKENDS[name][1], recall
        top = store.search(vectors[:5], 3)
        assert [r.ids[0] for r in top] == ids[:5].tolist()  # each vector finds itself, with cosine 1
        np.testing.assert_allclose([r.scores[0] for r in top], 1.0, atol=1e-3)
        np.testing.assert_allclose(store.reconstruct(int(ids[7])), vectors[7], atol=1e-2)
        assert store.reconstruct(1) is None
        with pytest.raises(ValueError, match="duplicate ids"):
            store.add(ids[:2], vectors[:2])
        assert store.remove([int(ids[0]), int(ids[1]), 2]) == 2  # unknown ids are ignored
        assert len(store) == len(ids) - 2
        assert not {int(ids[0]), int(ids[1])} & {i for r in store.search(vectors[:2], 10) for i in r.ids}
        store.add([5], vectors[:1])  # an id may come back after its removal
        assert store.search(vectors[:1], 1)[0].ids == [5]
    finally:
        if isinstance(store, MilvusVectors):
            store.drop()


INDEX_BACKENDS = ["faiss-flat", "milvus-flat"]  # the kinds' differences are the vector store's, tested above


@pytest.mark.parametrize("name", INDEX_BACKENDS)
def test_image_index_contract(
    name: str, request: pytest.FixtureRequest, tmp_settings: Settings, tmp_path: Path
) -> None:
    vector_index = backend_settings(name, request)
    settings = tmp_settings.model_copy(update={"vector_index": vector_index})
    if vector_index.backend == "milvus" and name == "milvus-flat":  # the cluster deployment: metadata in PostgreSQL
        schema = request.getfixturevalue("pg_schema")
        url = request.getfixturevalue("postgres_url")
        settings = settings.model_copy(update={"database_url": f"{url}?options=-csearch_path%3D{schema}"})
    paths = write_random_images(tmp_path / "photos", 24, size=(16, 12))
    encoder = FakeImageEncoder(0)
    exact: Callable[[np.ndarray], list[int]]
    with open_index(settings, encoder) as index:
        report = index.add_paths(paths, progress=False)
        assert (report.added, len(index), index.index_kind) == (24, 24, _kind(name))
        assert_consistent(index)
        ids = np.asarray(index.store.ids(), dtype=np.int64)
        stored = np.stack([index.image_space.apply(index.raw_features(int(i))[None])[0] for i in ids])

        def exact(query: np.ndarray) -> list[int]:
            return ids[np.argsort(-(stored @ query))].tolist()

        hits = index.search(stored[3], k=5)[0]
        assert [h.id for h in hits] == exact(stored[3])[:5]
        assert [h.id for h in index.search(stored[3], k=3, offset=2)[0]] == exact(stored[3])[2:5]
        np.testing.assert_allclose(index.vector(int(ids[3])), stored[3], atol=1e-5)
        assert index.remove([int(ids[3]), 10_000]) == 1
        assert int(ids[3]) not in [h.id for h in index.search(stored[3], k=24)[0]]
        assert_consistent(index)
    with open_index(settings, encoder) as index:  # reopened: the vectors are where the sidecar says
        assert len(index) == 23 and encoder.encoded == 24
        assert [h.id for h in index.search(stored[5], k=4)[0]] == [i for i in exact(stored[5]) if i != ids[3]][:4]
        before = index.info["files"]["vectors"]
        assert index.rebuild(progress=False).added == 23
        assert_consistent(index)
        assert [h.id for h in index.search(stored[5], k=4)[0]] == [i for i in exact(stored[5]) if i != ids[3]][:4]
        if vector_index.backend == "milvus":  # a rebuild fills a new generation and drops the old one
            after = index.info["files"]["vectors"]
            assert after != before and after.startswith("milvus:")
            assert before.removeprefix("milvus:") not in index._state.vectors.client.list_collections()  # type: ignore[union-attr]
            index._state.vectors.drop()  # type: ignore[union-attr]


def _kind(name: str) -> str:
    return name if name.startswith("milvus") else name.removeprefix("faiss-")


def test_an_index_moves_from_faiss_to_milvus_by_reopening(
    request: pytest.FixtureRequest, tmp_settings: Settings, tmp_path: Path
) -> None:
    paths = write_random_images(tmp_path / "photos", 6, size=(16, 12))
    encoder = FakeImageEncoder(0)
    with open_index(tmp_settings, encoder) as index:
        index.add_paths(paths, progress=False)
        before = [[h.id for h in hits] for hits in index.search(np.stack([index.vector(i) for i in (1, 4)]), k=6)]
    milvus = tmp_settings.model_copy(update={"vector_index": backend_settings("milvus-flat", request)})
    with open_index(milvus, encoder) as index:  # reconciled with SQL: every vector re-added from the features cache
        assert (len(index), index.index_kind, encoder.encoded) == (6, "milvus-flat", 6)
        assert_consistent(index)
        queries = np.stack([index.vector(i) for i in (1, 4)])
        assert [[h.id for h in hits] for hits in index.search(queries, k=6)] == before
        assert not (tmp_settings.resolved_index_dir / "vectors.faiss").exists()
        index._state.vectors.drop()  # type: ignore[union-attr]
