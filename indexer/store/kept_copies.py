"""Which copy of a duplicated photo the user keeps (issue 36): a mark per photo, in the index's own database.

Marking a copy deletes nothing: it says which one a stack of duplicates shows (the library, search results)
and which copies ``polyglot index duplicates`` lists as the others. The marks live in their own table
(``kept_copies``) beside ``images``, created when first opened (or at the first mark, when the database was
read-only then: a service on an index it cannot write still starts, with no marks); a mark whose photo was removed is ignored (ids
are never reused, so it can never point at another photo) and dropped at the next change.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import DateTime, delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from indexer.store.metadata import ImageRow, MetadataStore
from indexer.store.sql import ID_TYPE


class _Base(DeclarativeBase):
    pass


class KeptCopyRow(_Base):
    __tablename__ = "kept_copies"

    image_id: Mapped[int] = mapped_column(ID_TYPE, primary_key=True, autoincrement=False)
    marked_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class KeptCopies:
    """The marks of one index's database (shares the metadata store's engine and its schema)."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        try:
            self._create()
        except SQLAlchemyError:
            self._created = False  # read-only (a full disk, a read-only copy): created at the first mark

    def _create(self) -> None:
        _Base.metadata.create_all(self.store.engine)
        self._created = True

    def ids(self) -> set[int]:
        """Photos marked as the copy to keep that are still in the index."""
        if not self._created:
            return set()
        query = select(KeptCopyRow.image_id).join(ImageRow, ImageRow.id == KeptCopyRow.image_id)
        with self.store.engine.connect() as connection:
            return {int(i) for i in connection.execute(query).scalars()}

    def keep(self, image_id: int, others: Iterable[int] = ()) -> None:
        """Mark ``image_id`` as the copy to keep and unmark ``others`` (the rest of its stack), in one
        transaction: one kept copy per stack."""
        others = [int(i) for i in others if int(i) != int(image_id)]
        if not self._created:
            self._create()
        with self.store.transaction() as session:
            session.execute(delete(KeptCopyRow).where(~KeptCopyRow.image_id.in_(select(ImageRow.id))))
            if others:
                session.execute(delete(KeptCopyRow).where(KeptCopyRow.image_id.in_(others)))
            if session.get(KeptCopyRow, int(image_id)) is None:
                session.add(KeptCopyRow(image_id=int(image_id), marked_at=datetime.now(UTC)))

    def unmark(self, image_id: int) -> bool:
        """Take the mark off; whether there was one."""
        if not self._created:
            return False
        with self.store.transaction() as session:
            result = session.execute(delete(KeptCopyRow).where(KeptCopyRow.image_id == int(image_id)))
            return bool(getattr(result, "rowcount", 0))
