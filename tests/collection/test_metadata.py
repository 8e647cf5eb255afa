"""SQL metadata store on SQLite and on the running PostgreSQL: CRUD, unique paths, ids never reused."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import IntegrityError

from indexer.store.metadata import MetadataStore, NewImage, redact_url, sqlite_url


def new(path: str, sha: str = "a" * 64, **fields: object) -> NewImage:
    return NewImage(path=path, sha256=sha, width=4, height=3, bytes=100, **fields)  # type: ignore[arg-type]


def exercise(store: MetadataStore) -> None:
    records = store.insert(
        [new("/p/a.jpg", title="A", tags=["x", "y"], extra={"k": 1}), new("/p/b.jpg", "b" * 64, caption="Bé")]
    )
    a, b = records
    assert a.id < b.id and a.added_at.tzinfo is not None
    got = store.get(a.id)
    assert got is not None and got.added_at.tzinfo == UTC
    assert (got.title, got.tags, got.extra) == ("A", ["x", "y"], {"k": 1})
    assert store.get(b.id).caption == "Bé"  # type: ignore[union-attr]
    assert store.by_paths(["/p/a.jpg", "/p/none.jpg"]) == {"/p/a.jpg": (a.id, "a" * 64)}
    assert store.by_sha256("b" * 64).id == b.id  # type: ignore[union-attr]
    assert store.count() == 2 and store.total_bytes() == 200
    assert [r.id for r in store.page(offset=1, limit=5)] == [b.id]
    assert store.id_keys([b.id, 12345]) == [(b.id, "b" * 64, "/p/b.jpg")]

    # A path is indexed once; the failed transaction leaves nothing behind.
    with pytest.raises(IntegrityError):
        store.insert([new("/p/c.jpg"), new("/p/a.jpg")])
    assert store.count() == 2 and not store.by_paths(["/p/c.jpg"])

    updated = store.update(a.id, title="A2", tags=["z"])
    assert updated is not None and (updated.title, updated.tags) == ("A2", ["z"])
    with pytest.raises(ValueError, match="editable"):
        store.update(a.id, sha256="f" * 64)

    # Replace in one transaction (a file whose content changed): same path, new id.
    (c,) = store.insert([new("/p/a.jpg", "c" * 64)], replace_ids=[a.id])
    assert c.id > b.id and store.get(a.id) is None

    # Ids are never reused, even after deleting the newest row.
    assert store.delete([c.id, 999]) == [c.id]
    (d,) = store.insert([new("/p/d.jpg")])
    assert d.id > c.id
    assert store.ids() == [b.id, d.id]


def test_sqlite_store(tmp_path: Path) -> None:
    store = MetadataStore(sqlite_url(tmp_path / "meta.sqlite"))
    exercise(store)
    store.close()
    reopened = MetadataStore(sqlite_url(tmp_path / "meta.sqlite"))
    assert reopened.count() == 2
    reopened.close()


@pytest.mark.postgres
def test_postgres_store(postgres_url: str, pg_schema: str) -> None:
    store = MetadataStore(postgres_url, schema=pg_schema)
    exercise(store)
    store.close()
    engine = create_engine(postgres_url)
    with engine.connect() as connection:
        count = connection.execute(text(f'SELECT COUNT(*) FROM "{pg_schema}".images')).scalar()
    engine.dispose()
    assert count == 2  # really written to the schema, not to public


def test_redact_url_hides_password() -> None:
    assert "secret" not in redact_url("postgresql+psycopg://u:secret@h/db")
