"""SQL metadata store on SQLite and on the running PostgreSQL: CRUD, unique paths, ids never reused."""

from __future__ import annotations

from datetime import UTC, datetime
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


def test_the_photo_facts_are_declared_once() -> None:
    """:class:`PhotoFacts` declares the facts; the SQL columns and the API's fields carry their own types (SQL's,
    pydantic's bounds and words) and must name the same facts, in the same order, with the same Python types."""
    import typing
    from dataclasses import fields

    from app.schemas.images import ImageMetadata
    from indexer.photo_metadata import FACTS, PhotoFacts
    from indexer.store.metadata import ImageRecord, ImageRow

    declared = typing.get_type_hints(PhotoFacts)
    assert FACTS == tuple(declared) == tuple(f.name for f in fields(PhotoFacts))
    columns = ImageRow.__table__.columns
    api = ImageMetadata.model_fields
    assert [column.name for column in columns if column.name in declared] == list(FACTS)
    assert [name for name in api if name in declared] == list(FACTS)
    for name in FACTS:
        (kind,) = set(typing.get_args(declared[name])) - {type(None)}  # every fact is optional
        assert columns[name].nullable and columns[name].type.python_type is kind, name
        assert api[name].annotation == declared[name] and api[name].default is None, name
    record = ImageRecord(
        id=1, path="/p/a.jpg", sha256="a" * 64, width=4, height=3, bytes=100, added_at=datetime.now(UTC)
    )
    assert list(record.columns()) == list(FACTS) and list(record.__dict__)[-len(FACTS) :] == list(FACTS)
