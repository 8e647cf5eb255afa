"""Two long-running processes holding the same index open (``index watch`` in a terminal and ``serve --watch``)
take turns writing to it: neither may save over what the other saved (each keeps its vectors in memory), and each
one's searches see the other's photos without reopening the index (indexer/store/revisions.py)."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest
from conftest import FakeImageEncoder, write_random_images
from process_holder import ProcessHolder
from test_collection import assert_consistent, open_index

from indexer.settings import Settings
from indexer.store.index_kinds import MMAP_KIND, PQ_MIN_VECTORS, VectorIndexSettings
from indexer.store.sidecar import Sidecar
from indexer.store.vector_files import load_vectors

# One process holding the index open: it adds the photo named on each ``add`` line, and on ``find`` answers the
# ids its in-memory vectors hold and the best hit of a search for each photo's own features.
HOLDER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    sys.path.insert(0, os.environ["TESTS_DIR"])
    from conftest import FakeImageEncoder
    from indexer.image_index import ImageIndex
    from indexer.image_space import ImageSpace
    from indexer.settings import Settings

    settings = Settings.model_validate_json(os.environ["SETTINGS"])
    index = ImageIndex.open(settings, encoder=FakeImageEncoder(0), image_space=ImageSpace("l2"))
    print("open", flush=True)
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "add":
            report = index.add_paths([Path(argument)], progress=False)
            answer = {"added": report.added, "failed": report.failed}
        elif command == "find":
            rows, count = index.store.ids(), len(index)  # len, like a search, takes in another process's save
            vectors = index._state.vectors
            held = sorted(vectors.ids().tolist()) if vectors is not None else []
            best = {}
            for id_ in rows:
                own = index.image_space.apply(index.raw_features(id_)[None])
                best[id_] = [hit.id for hit in index.search(own, k=1)[0]]
            answer = {"rows": rows, "held": held, "len": count, "best": best}
        else:
            break
        print(json.dumps(answer), flush=True)
    index.close()
    """
)


def index_holder(settings: Settings) -> ProcessHolder:
    """A child process with the index open, driven line by line."""
    return ProcessHolder(HOLDER, {"SETTINGS": settings.model_dump_json()}, "index")


# Every kind whose vectors are files in the folder: saved whole (flat, hnsw) or appended in place (ivf-pq-mmap, which
# a forced kind only becomes from PQ_MIN_VECTORS photos on). Milvus is one server both processes talk to.
@pytest.mark.parametrize(("kind", "first"), [("flat", 1), ("hnsw", 1), (MMAP_KIND, PQ_MIN_VECTORS)])
def test_two_processes_adding_in_turn_keep_each_others_photos(kind: str, first: int, tmp_path: Path) -> None:
    settings = Settings(
        home=tmp_path / "home",
        index_dir=tmp_path / "index",
        cache_dir=tmp_path / "cache",
        batch_size=64,
        vector_index=VectorIndexSettings(kind=kind, mmap_rerank=1000),  # exact re-ranking of every candidate
    )
    photos = write_random_images(tmp_path / "photos", first + 5, size=(8, 8))
    with open_index(settings, FakeImageEncoder(0)) as index:  # the index exists before both open it
        index.add_paths(photos[:first], progress=False)
        assert index.index_kind == kind
    watcher, server = index_holder(settings), index_holder(settings)
    try:
        for number, photo in enumerate(photos[first:], start=first + 1):  # turns, each never reopening
            writer = watcher if number % 2 == 0 else server
            assert writer.ask(f"add {photo}") == {"added": 1, "failed": []}
            # What a process saved is on disk whole after its turn (the other's photos included).
            sidecar = Sidecar.load(settings.resolved_index_dir)
            assert sidecar is not None
            saved = load_vectors(settings.resolved_index_dir, sidecar, settings.vector_index)
            assert saved is not None and len(saved) == number == sidecar.count
            found = writer.ask("find")
            assert found["held"] == found["rows"] and len(found["rows"]) == number
            assert all(best == [int(id_)] for id_, best in found["best"].items())
        time.sleep(1.2)  # a process that did not write sees the other's save within a second
        for holder in (watcher, server):
            found = holder.ask("find")
            assert len(found["rows"]) == len(photos)
            assert found["held"] == found["rows"] and found["len"] == len(photos)
            assert all(best == [int(id_)] for id_, best in found["best"].items())
    finally:
        watcher.close()
        server.close()
    sidecar = Sidecar.load(settings.resolved_index_dir)
    assert sidecar is not None
    saved = load_vectors(settings.resolved_index_dir, sidecar, settings.vector_index)
    assert saved is not None and len(saved) == len(photos) == sidecar.count  # before a reopening repairs anything
    with open_index(settings, FakeImageEncoder(0)) as reopened:
        assert len(reopened) == len(photos) and reopened.index_kind == kind
        assert_consistent(reopened)
