"""An image index that grows into ``ivf-pq-mmap``: the size rule, stats, add and remove without a rebuild, and a
writer killed in the middle of a rebuild (the last good generation stays the one in use)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FakeImageEncoder, write_random_images
from test_collection import assert_consistent, assert_finds_then_forgets, open_index

from indexer.settings import Settings
from indexer.store.index_kinds import MMAP_KIND, PQ_MIN_VECTORS, VectorIndexSettings
from indexer.store.sidecar import Sidecar

# Past 600 images the rule picks ivf-pq-mmap. The fake features of random pixels are near-uniform noise, on which
# 4-bit codes rank poorly: re-ranking every candidate keeps this test about the bookkeeping, not about recall
# (test_mmap_index.py measures recall on clustered data).
RULE = VectorIndexSettings(flat_max=10, exact_max=10, hnsw_max=600, mmap_rerank=1000, mmap_snapshot_rows=5)
TESTS_DIR = Path(__file__).resolve().parents[1]
KILLED_REBUILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, os.environ["TESTS_DIR"])
    from conftest import FakeImageEncoder
    from indexer.image_index import ImageIndex
    from indexer.image_space import ImageSpace
    from indexer.settings import Settings
    from indexer.store.index_kinds import VectorIndexSettings
    from indexer.store.mmap_index import MmapIvfIndex

    def die(*args, **kwargs):  # the rows of the new generation are written; the quantiser never finishes
        os.kill(os.getpid(), signal.SIGKILL)

    MmapIvfIndex.train = classmethod(die)
    settings = Settings.model_validate_json(os.environ["SETTINGS"])
    index = ImageIndex.open(settings, encoder=FakeImageEncoder(), image_space=ImageSpace("l2"))
    index.rebuild(progress=False)
    """
)


def settings_in(root: Path) -> Settings:
    return Settings(
        home=root / "home", index_dir=root / "index", cache_dir=root / "cache", batch_size=64, vector_index=RULE
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of PQ_MIN_VECTORS + 20 images that grew from flat into ivf-pq-mmap (built once, copied per test)."""
    root = tmp_path_factory.mktemp("grown")
    paths = write_random_images(root / "in", PQ_MIN_VECTORS + 22, size=(8, 8))
    with open_index(settings_in(root), FakeImageEncoder(0)) as index:
        index.add_paths(paths[:10], progress=False)
        assert index.index_kind == "flat"
        index.add_paths(paths[:-2], progress=False)
        assert index.index_kind == MMAP_KIND
    return root


@pytest.fixture
def grown(template: Path, tmp_path: Path) -> Settings:
    for name in ("index", "cache"):
        shutil.copytree(template / name, tmp_path / name)
    os.symlink(template / "in", tmp_path / "in")
    return settings_in(tmp_path)


def test_growth_into_mmap_kind_then_add_and_remove_without_rebuild(
    grown: Settings, tmp_path: Path, fake_encoder: FakeImageEncoder
) -> None:
    with open_index(grown, fake_encoder) as index:
        stats = index.stats()
        assert stats["index_type"] == MMAP_KIND == stats["index_type_rule"] and stats["vectors_on_disk_only"]
        assert stats["memory_bytes_per_image"] < 0.1 * 4 * 48 * 10  # codes, not vectors, in RAM
        generation = index.info["files"]["vectors"]
        assert generation.startswith(f"{MMAP_KIND}/g") and not (index.folder / "vectors.faiss").exists()
        query = assert_finds_then_forgets(index, 42)
        extra = sorted((tmp_path / "in").iterdir())[-2:]
        assert index.add_paths(extra, progress=False).added == 2
        assert index.info["files"]["vectors"] == generation  # no rebuild: same generation, rows appended
        assert_consistent(index)
        count = len(index)
    with open_index(grown, FakeImageEncoder(0)) as reopened:
        assert reopened.index_kind == MMAP_KIND and len(reopened) == count
        assert all(hit.id != 42 for hit in reopened.search(query, k=5)[0])
        assert_consistent(reopened)


def test_writer_killed_during_rebuild_leaves_the_last_good_generation(
    grown: Settings, fake_encoder: FakeImageEncoder
) -> None:
    folder = grown.resolved_index_dir
    with open_index(grown, fake_encoder) as index:
        before = Sidecar.load(folder)
        query = index.vector(7)
        hits = [hit.id for hit in index.search(query, k=5)[0]]  # type: ignore[arg-type]
    # PYTHONPATH: the checkout under test, not whichever one the environment has installed
    root = str(TESTS_DIR.parent)
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "TESTS_DIR": str(TESTS_DIR), "SETTINGS": grown.model_dump_json(), "PYTHONPATH": path}
    killed = subprocess.run([sys.executable, "-c", KILLED_REBUILD], env=env, capture_output=True, timeout=120)
    assert killed.returncode == -9, killed.stderr.decode()[-2000:]
    generations = sorted((folder / MMAP_KIND).iterdir())
    assert len(generations) == 2  # the half-written one is there, but the sidecar does not name it
    assert Sidecar.load(folder).files["vectors"] == before.files["vectors"]  # type: ignore[union-attr]
    with open_index(grown, FakeImageEncoder(0)) as reopened:
        assert [hit.id for hit in reopened.search(query, k=5)[0]] == hits  # type: ignore[arg-type]
        assert_consistent(reopened)
        assert [p.name for p in (folder / MMAP_KIND).iterdir()] == [before.files["vectors"].split("/")[1]]  # type: ignore[union-attr]
        reopened.rebuild(progress=False)  # a rebuild that finishes switches generations and drops the old one
        assert reopened.info["files"]["vectors"] != before.files["vectors"]  # type: ignore[union-attr]
        assert len(list((folder / MMAP_KIND).iterdir())) == 1
        assert [hit.id for hit in reopened.search(query, k=5)[0]] == hits  # type: ignore[arg-type]
