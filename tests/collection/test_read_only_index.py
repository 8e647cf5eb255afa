"""The read-only opener ``polyglot search`` uses (indexer/store/read_only.py, issue 36): it finds what
``ImageIndex`` finds, reads the same rows, never writes to the folder, and steps aside (None) whenever only
``ImageIndex.open`` can open the index as it stands (another database, a migration, a writer's unfinished state)."""

from __future__ import annotations

import fcntl
import sqlite3
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import FakeImageEncoder
from photo_samples import jpeg, write

from indexer.image_index import ImageIndex
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store.failures import BackendUnavailableError
from indexer.store.opening import IndexFileCorruptError, IndexMismatchError, IndexNotFoundError, MetadataMissingError
from indexer.store.read_only import ReadOnlyIndex, ReadOnlyRows
from indexer.store.sidecar import DB_NAME, SIDECAR_NAME, Sidecar

L2 = ImageSpace("l2")
LISBON, TOKYO = (38.7223, -9.1393), (35.6762, 139.6503)


@pytest.fixture
def indexed(tmp_settings: Settings, tmp_path: Path) -> Settings:
    """An index of 9 photos: dated ones in Lisbon and Tokyo, dated ones without GPS, and undated ones."""
    folder = tmp_path / "photos"
    paths = []
    for n in range(9):
        facts: dict[str, object] = {}
        if n % 3 != 2:
            facts["taken"] = datetime(2024, 6, 1 + n, 9, 30, n)
        if n % 3 == 0:
            facts["gps"] = LISBON if n < 5 else TOKYO
        paths.append(write(folder, f"photo {n}.jpg", jpeg(seed=n, **facts)))
    with ImageIndex.open(tmp_settings, encoder=FakeImageEncoder(0), image_space=L2) as index:
        assert index.add_paths(paths, progress=False).added == 9
    return tmp_settings


def open_read_only(settings: Settings) -> ReadOnlyIndex | None:
    return ReadOnlyIndex.open(settings, L2, encoder=FakeImageEncoder(0))


def folder_state(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def test_it_finds_and_reads_what_the_image_index_does(indexed: Settings) -> None:
    queries = np.random.default_rng(7).standard_normal((3, FakeImageEncoder.dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    with ImageIndex.open(indexed, encoder=FakeImageEncoder(0), image_space=L2, create=False) as full:
        expected = [full.search(queries, k) for k in (1, 4, 9, 20)]
        ids = full.store.ids()
        rows = (full.store.id_keys(ids), full.store.taken(ids), full.store.places(ids))
        count = len(full)
    read_only = open_read_only(indexed)
    assert read_only is not None
    with read_only:
        assert len(read_only) == count == 9
        assert [read_only.search(queries, k) for k in (1, 4, 9, 20)] == expected  # same ids, same float scores
        assert (read_only.store.id_keys(ids), read_only.store.taken(ids), read_only.store.places(ids)) == rows
    id_keys, taken, places = rows
    # the comparison means something: dated and undated photos, named places and none
    assert {t is None for t in taken.values()} == {True, False}
    assert taken[ids[0]] == datetime(2024, 6, 1, 9, 30, 0)
    assert None in {place.label for place in places.values()} and len({p.label for p in places.values()}) == 3
    assert all(path.endswith(".jpg") for _, _, path in id_keys)


def test_it_changes_nothing_in_the_folder(indexed: Settings) -> None:
    """No file made or changed but SQLite's own shared-memory and (empty) WAL files, which any reader of a WAL
    database opens beside it; not the write lock, not the database, not the sidecar or the vectors."""
    folder = indexed.resolved_index_dir
    (folder / ".write.lock").unlink()
    before = folder_state(folder)
    read_only = open_read_only(indexed)
    assert read_only is not None
    with read_only:
        read_only.search(np.ones((1, FakeImageEncoder.dim), dtype=np.float32), 3)
        read_only.store.taken(read_only.store.ids().tolist())
    after = folder_state(folder)
    assert after.get(f"{DB_NAME}-wal", (0, 0))[0] == 0
    for state in (before, after):
        for sqlite_own in (f"{DB_NAME}-wal", f"{DB_NAME}-shm"):
            state.pop(sqlite_own, None)
    assert after == before and ".write.lock" not in after


def test_it_searches_while_another_process_holds_the_write_lock(indexed: Settings) -> None:
    folder = indexed.resolved_index_dir
    with (folder / ".write.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        read_only = open_read_only(indexed)
        assert read_only is not None and len(read_only) == 9
        read_only.close()


def test_what_only_the_full_opener_can_open_is_left_to_it(indexed: Settings) -> None:
    assert (
        ReadOnlyIndex.open(
            indexed.model_copy(update={"database_url": f"sqlite:///{indexed.resolved_index_dir / DB_NAME}"}),
            L2,
            encoder=FakeImageEncoder(0),
        )
        is None
    )
    database = indexed.resolved_index_dir / DB_NAME
    with sqlite3.connect(database) as connection:  # a row without a vector: a writer killed or still writing
        connection.execute(
            "INSERT INTO images (path, sha256, width, height, bytes, added_at, tags, extra) "
            "VALUES ('/gone.jpg', 'ab', 1, 1, 1, '2024-01-01 00:00:00', '[]', '{}')"
        )
    assert open_read_only(indexed) is None
    with sqlite3.connect(database) as connection:  # back in agreement: served again
        connection.execute("DELETE FROM images WHERE path = '/gone.jpg'")
    assert open_read_only(indexed) is not None
    sidecar = Sidecar.load(indexed.resolved_index_dir)
    assert sidecar is not None
    sidecar.count += 1  # the sidecar counts other vectors than the file holds
    sidecar.save(indexed.resolved_index_dir)
    assert open_read_only(indexed) is None
    sidecar.count -= 1
    sidecar.save(indexed.resolved_index_dir)
    # an index from before a column was added: the full opener migrates it
    with sqlite3.connect(database) as connection:
        connection.execute("ALTER TABLE images DROP COLUMN region")
    assert open_read_only(indexed) is None
    with ImageIndex.open(indexed, encoder=FakeImageEncoder(0), image_space=L2, create=False) as index:
        assert len(index) == 9
    assert open_read_only(indexed) is not None
    database.unlink()
    for extra in ("-wal", "-shm"):
        Path(f"{database}{extra}").unlink(missing_ok=True)
    # No longer left to the full opener, whose new empty database made its repair drop every vector: both refuse
    # it (tests/collection/test_missing_metadata.py).
    with pytest.raises(MetadataMissingError):
        open_read_only(indexed)


def test_its_refusals_are_the_full_openers(indexed: Settings, tmp_path: Path) -> None:
    other = FakeImageEncoder(0)
    other.name = "another-encoder"
    with pytest.raises(IndexMismatchError, match="another-encoder"):
        ReadOnlyIndex.open(indexed, L2, encoder=other)
    with pytest.raises(IndexMismatchError, match="polyglot index rebuild"):
        ReadOnlyIndex.open(
            indexed, ImageSpace("center-l2", mean=np.full(48, 0.3, dtype=np.float32)), encoder=FakeImageEncoder(0)
        )
    with pytest.raises(IndexNotFoundError, match="polyglot index add"):
        open_read_only(indexed.model_copy(update={"index_dir": tmp_path / "nothing"}))
    (indexed.resolved_index_dir / DB_NAME).write_bytes(b"not a database, but long enough to be read as one" * 100)
    for extra in ("-wal", "-shm"):
        Path(f"{indexed.resolved_index_dir / DB_NAME}{extra}").unlink(missing_ok=True)
    with pytest.raises(IndexFileCorruptError, match="not a database"):
        open_read_only(indexed)
    (indexed.resolved_index_dir / SIDECAR_NAME).write_text("{")
    with pytest.raises(ValueError, match="cannot read"):
        open_read_only(indexed)


def test_a_database_locked_longer_than_its_wait_is_one_clear_error(indexed: Settings) -> None:
    database = indexed.resolved_index_dir / DB_NAME
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")  # taken at the next write and kept until closed
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("UPDATE images SET title = 'x' WHERE id = 1")
        holder.execute("COMMIT")
        with pytest.raises(BackendUnavailableError, match="locked"):
            rows = ReadOnlyRows.open(database, timeout=0.05)
            if rows is not None:
                rows.ids()
    finally:
        holder.close()
