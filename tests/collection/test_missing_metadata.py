"""An index folder whose ``metadata.sqlite`` is gone (deleted by hand, left out of a copy, a wrong volume) is refused
and left untouched: opening it created an empty database, and the crash repair then dropped every vector (no row
claimed them), so one incomplete copy cost the whole index. A new index is still created as before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import FakeImageEncoder

from indexer.image_index import ImageIndex, IndexMismatchError, MetadataMissingError
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store.read_only import ReadOnlyIndex
from indexer.store.sidecar import DB_NAME, Sidecar

L2 = ImageSpace("l2")


def open_index(settings: Settings, **kwargs: bool) -> ImageIndex:
    return ImageIndex.open(settings, encoder=FakeImageEncoder(0), image_space=L2, **kwargs)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of the folder (subfolders too) and its bytes."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def indexed(tmp_settings: Settings, image_folder: Path) -> Path:
    """An index of the 6 photos of ``image_folder``; returns its folder."""
    with open_index(tmp_settings) as index:
        assert index.add_paths(sorted(image_folder.rglob("*.*")), progress=False).added == 6
    folder = tmp_settings.resolved_index_dir
    assert Sidecar.load(folder).count == 6  # type: ignore[union-attr]
    return folder


@pytest.mark.parametrize("create", [True, False])
def test_a_deleted_database_is_refused_and_the_folder_left_byte_for_byte(
    tmp_settings: Settings, indexed: Path, create: bool
) -> None:
    (indexed / DB_NAME).unlink()
    before = folder_bytes(indexed)
    assert "vectors.faiss" in before
    with pytest.raises(MetadataMissingError) as refused:
        open_index(tmp_settings, create=create)
    message = str(refused.value)
    assert "\n" not in message
    assert f"{indexed / DB_NAME} is missing" in message and "6 photos" in message
    assert "vectors are left as they are" in message and "polyglot index add" in message
    assert isinstance(refused.value, IndexMismatchError)  # every caller's one-line refusal of an index it cannot use
    # Nothing was created (no empty database) and nothing was dropped: every file is as it was.
    assert folder_bytes(indexed) == before and not (indexed / DB_NAME).exists()
    # `polyglot search`'s read-only opener refuses it the same way (it stepped aside to ImageIndex.open, which
    # created the empty database).
    with pytest.raises(MetadataMissingError):
        ReadOnlyIndex.open(tmp_settings, L2, encoder=FakeImageEncoder(0))
    assert folder_bytes(indexed) == before


@pytest.mark.parametrize("replacement", ["empty file", "new database"])
def test_a_database_without_the_photos_table_is_refused(
    tmp_settings: Settings, indexed: Path, replacement: str
) -> None:
    """A truncated copy (0 bytes), or a database some process created after the real one was deleted: the repair
    would drop every vector just the same."""
    (indexed / DB_NAME).unlink()
    if replacement == "empty file":
        (indexed / DB_NAME).write_bytes(b"")
    else:
        sqlite3.connect(indexed / DB_NAME).execute("CREATE TABLE unrelated (x)").connection.close()
    vectors = (indexed / "vectors.faiss").read_bytes()
    with pytest.raises(MetadataMissingError, match="holds no photo table"):
        open_index(tmp_settings)
    with pytest.raises(MetadataMissingError, match="holds no photo table"):
        ReadOnlyIndex.open(tmp_settings, L2, encoder=FakeImageEncoder(0))
    assert (indexed / "vectors.faiss").read_bytes() == vectors and Sidecar.load(indexed).count == 6  # type: ignore[union-attr]


def test_restoring_the_database_opens_the_index_whole(tmp_settings: Settings, indexed: Path) -> None:
    """The refusal's advice works: the database put back, every photo is there again."""
    saved = (indexed / DB_NAME).read_bytes()
    (indexed / DB_NAME).unlink()
    with pytest.raises(MetadataMissingError):
        open_index(tmp_settings)
    (indexed / DB_NAME).write_bytes(saved)
    with open_index(tmp_settings) as index:
        assert len(index) == 6 and len(index.store.ids()) == 6


def test_a_new_index_is_still_created(tmp_settings: Settings, image_folder: Path) -> None:
    """No sidecar: created. A sidecar that counts nothing, with no vectors and no database (an index opened and
    never filled, then its database lost): nothing to lose, so opened and its database made again."""
    folder = tmp_settings.resolved_index_dir
    with open_index(tmp_settings) as index:
        assert len(index) == 0
    assert (folder / DB_NAME).is_file() and not (folder / "vectors.faiss").exists()
    (folder / DB_NAME).unlink()
    with open_index(tmp_settings, create=False) as index:
        assert index.add_paths(sorted(image_folder.rglob("*.*")), progress=False).added == 6
    assert (folder / DB_NAME).is_file() and Sidecar.load(folder).count == 6  # type: ignore[union-attr]
