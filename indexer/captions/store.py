"""The ``captions`` table (SQLAlchemy 2.0 typed ORM), the source of truth of a caption index.

``captions.id`` is also the FAISS id of the caption's vector and is never reused (SQLite ``AUTOINCREMENT``,
PostgreSQL sequence), so an id left over in a FAISS file after a crash cannot name a newer caption. A
``(lang, text)`` pair is stored once. The SQLite layout is the one the raw-sqlite3 version created, so an
existing ``captions.sqlite`` opens as it is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Text, UniqueConstraint, delete, func, insert, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from indexer.caption_records import Caption
from indexer.store.sql import BATCH, ID_TYPE, SqlStore


class CaptionBase(DeclarativeBase):
    """Apart from the images' ``Base``: each store creates only its own tables."""


class CaptionRow(CaptionBase):
    __tablename__ = "captions"
    __table_args__ = (UniqueConstraint("lang", "text"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(ID_TYPE, primary_key=True, autoincrement=True)
    lang: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text)
    image: Mapped[str | None] = mapped_column(Text)
    source: Mapped[str | None] = mapped_column(Text)


@dataclass(frozen=True)
class StoredCaption:
    """A caption row, detached from any session."""

    id: int
    lang: str
    text: str
    image: str | None
    source: str | None


class CaptionStore(SqlStore):
    """The ``captions`` table behind a small API; safe to share between threads."""

    def __init__(self, url: str, schema: str | None = None) -> None:
        super().__init__(url, CaptionBase.metadata, schema)

    # ------------------------------------------------------------------ reads
    def count(self, lang: str | None = None) -> int:
        query = select(func.count(CaptionRow.id))
        if lang is not None:
            query = query.where(CaptionRow.lang == lang)
        with self._sessions() as session:
            return int(session.scalar(query) or 0)

    def counts(self) -> dict[str, int]:
        """Captions per language, by language."""
        query = select(CaptionRow.lang, func.count(CaptionRow.id)).group_by(CaptionRow.lang).order_by(CaptionRow.lang)
        with self._sessions() as session:
            return {lang: int(n) for lang, n in session.execute(query)}

    def ids_by_lang(self) -> dict[str, list[int]]:
        """Every id, grouped by language, ascending: what the FAISS files must hold."""
        found: dict[str, list[int]] = defaultdict(list)
        with self._sessions() as session:
            for id_, lang in session.execute(select(CaptionRow.id, CaptionRow.lang).order_by(CaptionRow.id)):
                found[lang].append(int(id_))
        return dict(found)

    def texts(self, lang: str) -> tuple[list[int], list[str]]:
        """Ids and texts of one language, by id."""
        query = select(CaptionRow.id, CaptionRow.text).where(CaptionRow.lang == lang).order_by(CaptionRow.id)
        with self._sessions() as session:
            rows = session.execute(query).all()
        return [int(i) for i, _ in rows], [t for _, t in rows]

    def page(self, lang: str | None = None, offset: int = 0, limit: int = 100) -> list[StoredCaption]:
        query = select(CaptionRow).order_by(CaptionRow.id).offset(max(0, offset)).limit(max(0, limit))
        if lang:
            query = query.where(CaptionRow.lang == lang)
        with self._sessions() as session:
            return [_detached(row) for row in session.scalars(query)]

    def get_many(self, ids: Sequence[int]) -> dict[int, StoredCaption]:
        out: dict[int, StoredCaption] = {}
        unique = sorted({int(i) for i in ids})
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                query = select(CaptionRow).where(CaptionRow.id.in_(unique[start : start + BATCH]))
                out.update({int(row.id): _detached(row) for row in session.scalars(query)})
        return out

    def missing(self, captions: Sequence[Caption]) -> list[Caption]:
        """The captions whose (lang, text) is not stored yet, each pair once (the last row of a pair wins)."""
        with self._sessions() as session:
            return _missing(session, captions)

    # ------------------------------------------------------------------ writes
    def insert(self, captions: Sequence[Caption]) -> list[tuple[int, str, str]]:
        """Store the captions not stored yet, in one transaction; ``(id, lang, text)`` of the new rows, by id."""
        with self.transaction() as session:
            fresh = _missing(session, captions)
            if not fresh:
                return []
            rows = [
                {"lang": c.lang, "text": c.text, "image": c.image or None, "source": c.source or None} for c in fresh
            ]
            statement = insert(CaptionRow).returning(CaptionRow.id, CaptionRow.lang, CaptionRow.text)
            new = session.execute(statement, rows).all()
        return sorted((int(i), lang, text) for i, lang, text in new)

    def delete_ids(self, ids: Sequence[int]) -> None:
        """Delete rows by id, in one transaction (undoing an insert whose vectors could not be saved)."""
        if not ids:
            return
        with self.transaction() as session:
            for start in range(0, len(ids), BATCH):
                session.execute(delete(CaptionRow).where(CaptionRow.id.in_(list(ids)[start : start + BATCH])))

    def delete(
        self, lang: str | None = None, source: str | None = None, image: str | None = None
    ) -> list[tuple[int, str]]:
        """Delete the rows matching every given filter, in one transaction; ``(id, lang)`` of those deleted."""
        filters: list[ColumnElement[bool]] = []
        for column, value in ((CaptionRow.lang, lang), (CaptionRow.source, source), (CaptionRow.image, image)):
            if value:
                filters.append(column == value)
        if not filters:
            raise ValueError("give at least one of lang, source or image to remove captions")
        with self.transaction() as session:
            doomed = [
                (int(i), code) for i, code in session.execute(select(CaptionRow.id, CaptionRow.lang).where(*filters))
            ]
            ids = [i for i, _ in doomed]
            for start in range(0, len(ids), BATCH):
                session.execute(delete(CaptionRow).where(CaptionRow.id.in_(ids[start : start + BATCH])))
        return sorted(doomed)


def _missing(session: Session, captions: Sequence[Caption]) -> list[Caption]:
    unique = list({(c.lang, c.text): c for c in captions}.values())
    by_lang: dict[str, list[str]] = defaultdict(list)
    for caption in unique:
        by_lang[caption.lang].append(caption.text)
    stored: set[tuple[str, str]] = set()
    for lang, texts in by_lang.items():
        for start in range(0, len(texts), BATCH):
            query = select(CaptionRow.text).where(
                CaptionRow.lang == lang, CaptionRow.text.in_(texts[start : start + BATCH])
            )
            stored.update((lang, text) for text in session.scalars(query))
    return [c for c in unique if (c.lang, c.text) not in stored]


def _detached(row: CaptionRow) -> StoredCaption:
    return StoredCaption(int(row.id), row.lang, row.text, row.image, row.source)
