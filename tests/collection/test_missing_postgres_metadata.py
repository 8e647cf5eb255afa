"""An index whose metadata lives on PostgreSQL (``POLYGLOT_DATABASE_URL``) pointed at a database or schema without
its photo rows (a fresh pgdata volume, the wrong database or schema, a folder restored without its pg_dump) is refused
and left untouched: opening it created empty tables, and the crash repair then dropped every vector. A new index
still creates its tables, and metadata older than the vectors still reconciles to what both contain.

Each test has its own schemas (``pg_schema`` and :func:`other_schema`): two runs can share one server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FakeImageEncoder
from sqlalchemy import create_engine, text

from indexer.image_index import ImageIndex, MetadataMissingError
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store.sidecar import DB_NAME, Sidecar

L2 = ImageSpace("l2")
PASSWORD = "s3cret-pw"  # trust authentication ignores it; the refusal must not print it


def open_index(settings: Settings, **kwargs: bool) -> ImageIndex:
    return ImageIndex.open(settings, encoder=FakeImageEncoder(0), image_space=L2, **kwargs)


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def schema_url(postgres_url: str, schema: str) -> str:
    """The server's URL with a password and the tables put in ``schema`` (libpq's search_path option)."""
    with_password = postgres_url.replace("postgres@", f"postgres:{PASSWORD}@", 1)
    assert PASSWORD in with_password
    return f"{with_password}?options=-csearch_path%3D{schema}"


def run_sql(postgres_url: str, statement: str) -> list[tuple]:
    engine = create_engine(postgres_url)
    try:
        with engine.begin() as connection:
            result = connection.execute(text(statement))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def tables_in(postgres_url: str, schema: str) -> list[str]:
    rows = run_sql(postgres_url, f"SELECT table_name FROM information_schema.tables WHERE table_schema = '{schema}'")
    return sorted(row[0] for row in rows)


@pytest.fixture
def other_schema(postgres_url: str) -> Iterator[str]:
    """A second fresh, empty schema (the "wrong database"), dropped after the test."""
    schema = f"test_{uuid.uuid4().hex[:12]}"
    run_sql(postgres_url, f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        run_sql(postgres_url, f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def indexed(tmp_settings: Settings, image_folder: Path, postgres_url: str, pg_schema: str) -> Settings:
    """An index of the 6 photos of ``image_folder`` whose rows are in ``pg_schema``; returns its settings."""
    settings = tmp_settings.model_copy(update={"database_url": schema_url(postgres_url, pg_schema)})
    with open_index(settings) as index:
        assert index.add_paths(sorted(image_folder.rglob("*.*")), progress=False).added == 6
    folder = settings.resolved_index_dir
    assert Sidecar.load(folder).count == 6 and not (folder / DB_NAME).exists()  # type: ignore[union-attr]
    return settings


@pytest.mark.postgres
@pytest.mark.parametrize("create", [True, False])
def test_an_empty_database_is_refused_nothing_created_nothing_dropped(
    indexed: Settings, postgres_url: str, other_schema: str, create: bool
) -> None:
    folder = indexed.resolved_index_dir
    before = folder_bytes(folder)
    wrong = indexed.model_copy(update={"database_url": schema_url(postgres_url, other_schema)})
    with pytest.raises(MetadataMissingError) as refused:
        open_index(wrong, create=create)
    message = str(refused.value)
    assert "\n" not in message and "6 photos" in message and "has no images table" in message
    assert other_schema in message and PASSWORD not in message and "***" in message  # which database, masked
    assert "vectors are left as they are" in message and "POLYGLOT_DATABASE_URL" in message
    assert "polyglot index add" in message
    assert tables_in(postgres_url, other_schema) == []  # no empty tables made there
    assert folder_bytes(folder) == before  # every vector kept
    # The advice works: the right database, and every photo is there.
    with open_index(indexed, create=create) as index:
        assert len(index) == 6 and len(index.store.ids()) == 6


@pytest.mark.postgres
def test_an_empty_photo_table_is_refused_and_a_new_index_still_creates_its_tables(
    indexed: Settings, tmp_path: Path, postgres_url: str, other_schema: str
) -> None:
    """The tables are there but hold no row (a new index was opened against that database first, or the service of
    a fresh volume created them): the repair would drop every vector just the same."""
    url = schema_url(postgres_url, other_schema)
    new_index = indexed.model_copy(update={"database_url": url, "index_dir": tmp_path / "new-index"})
    with open_index(new_index) as index:  # a new index: nothing to lose, its tables are created
        assert len(index) == 0
    assert "images" in tables_in(postgres_url, other_schema)
    folder = indexed.resolved_index_dir
    before = folder_bytes(folder)
    with pytest.raises(MetadataMissingError, match="holds no photo rows"):
        open_index(indexed.model_copy(update={"database_url": url}))
    assert folder_bytes(folder) == before
    assert run_sql(postgres_url, f'SELECT COUNT(*) FROM "{other_schema}".images') == [(0,)]


@pytest.mark.postgres
def test_older_metadata_reconciles_to_what_both_contain(indexed: Settings, postgres_url: str, pg_schema: str) -> None:
    """A dump taken before the last photos were added (docs/deployment.md, Backups): the index opens with the photos both
    know, as before; only metadata without a single row is refused."""
    run_sql(postgres_url, f'DELETE FROM "{pg_schema}".images WHERE id > 4')
    with open_index(indexed) as index:
        assert len(index) == 4 and sorted(index.store.ids()) == [1, 2, 3, 4]
    assert Sidecar.load(indexed.resolved_index_dir).count == 4  # type: ignore[union-attr]


def test_a_sqlite_database_url_that_is_missing_is_refused_and_not_created(
    tmp_settings: Settings, image_folder: Path, tmp_path: Path
) -> None:
    """POLYGLOT_DATABASE_URL naming a SQLite file elsewhere: connecting would create the missing file."""
    database = tmp_path / "elsewhere" / "photos.sqlite"
    database.parent.mkdir()
    settings = tmp_settings.model_copy(update={"database_url": f"sqlite:///{database}"})
    with open_index(settings) as index:
        assert index.add_paths(sorted(image_folder.rglob("*.*")), progress=False).added == 6
    database.unlink()
    with pytest.raises(MetadataMissingError, match="is missing"):
        open_index(settings)
    assert not database.exists() and Sidecar.load(settings.resolved_index_dir).count == 6  # type: ignore[union-attr]
