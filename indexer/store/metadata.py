"""Image metadata in SQL (SQLAlchemy 2.0 typed ORM): a SQLite file by default, any database URL otherwise
(opened by :class:`indexer.store.sql.SqlStore`, as the caption index's table is).

The ``images.id`` primary key is also the FAISS id of the image's vector. Ids are never reused (SQLite
``AUTOINCREMENT``, PostgreSQL sequences), so an id left over in a FAISS file after a crash can never be
mistaken for a newer image. Every write runs in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from sqlalchemy import JSON, BigInteger, DateTime, Float, Integer, SmallInteger, String, Text, and_, func, or_, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from indexer.folder_names import close_folder_names, matching_folders
from indexer.photo_metadata import FACTS, PhotoFacts
from indexer.places import Place, PlaceNames, place_names
from indexer.search_filters import FolderNotFoundError, Near, PhotoFilter, PlaceNotFoundError, distance_km
from indexer.store.migrate import add_missing_columns
from indexer.store.sql import BATCH, ID_TYPE, SqlStore
from indexer.store.sql import redact_url as redact_url  # re-exported: callers import them from here
from indexer.store.sql import sqlite_url as sqlite_url

_EDITABLE = frozenset({"title", "caption", "tags", "extra"})


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[str]: JSON}


class ImageRow(Base):
    __tablename__ = "images"
    __table_args__ = {"sqlite_autoincrement": True}  # noqa: RUF012 (SQLAlchemy reads it from the class)

    id: Mapped[int] = mapped_column(ID_TYPE, primary_key=True, autoincrement=True)
    path: Mapped[str] = mapped_column(String(4096), unique=True)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    width: Mapped[int]
    height: Mapped[int]
    bytes: Mapped[int] = mapped_column(BigInteger)
    added_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    title: Mapped[str | None] = mapped_column(Text)
    caption: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(default=list)
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # The photo facts (:class:`PhotoFacts`, their one declaration: the column types are SQL's, checked against it
    # by tests/collection/test_metadata.py); issue 27; added in place to existing tables by indexer/store/migrate.py.
    folder: Mapped[str | None] = mapped_column(String(4096), index=True)
    taken_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=False), index=True)  # local wall clock
    taken_offset_minutes: Mapped[int | None] = mapped_column(Integer)
    latitude: Mapped[float | None] = mapped_column(Float, index=True)
    longitude: Mapped[float | None] = mapped_column(Float)
    camera_make: Mapped[str | None] = mapped_column(String(255))
    camera_model: Mapped[str | None] = mapped_column(String(255))
    orientation: Mapped[int | None] = mapped_column(SmallInteger)
    city: Mapped[str | None] = mapped_column(String(200), index=True)  # issue 36: indexer/places.py
    region: Mapped[str | None] = mapped_column(String(200))
    country: Mapped[str | None] = mapped_column(String(200), index=True)
    file_modified_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=False))  # local wall clock


@dataclass
class _RecordFields:
    id: int
    path: str
    sha256: str
    width: int
    height: int
    bytes: int
    added_at: datetime
    title: str | None = None
    caption: str | None = None
    tags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ImageRecord(PhotoFacts, _RecordFields):
    """One indexed image, detached from any database session: its fields, then its photo facts."""

    @classmethod
    def from_row(cls, row: ImageRow) -> ImageRecord:
        # SQLite drops the time zone, PostgreSQL returns the session's: always hand out UTC.
        added = row.added_at.astimezone(UTC) if row.added_at.tzinfo else row.added_at.replace(tzinfo=UTC)
        return cls(
            id=int(row.id),
            path=row.path,
            sha256=row.sha256,
            width=int(row.width),
            height=int(row.height),
            bytes=int(row.bytes),
            added_at=added,
            title=row.title,
            caption=row.caption,
            tags=list(row.tags or []),
            extra=dict(row.extra or {}),
            # PostgreSQL hands back naive timestamps as they were written; SQLite too (its DateTime is text)
            taken_at=row.taken_at.replace(tzinfo=None) if row.taken_at else None,
            file_modified_at=row.file_modified_at.replace(tzinfo=None) if row.file_modified_at else None,
            **{name: getattr(row, name) for name in FACTS if name not in ("taken_at", "file_modified_at")},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            **self.__dict__,
            "added_at": self.added_at.isoformat(),
            "taken_at": self.taken_at.isoformat() if self.taken_at else None,
            "file_modified_at": self.file_modified_at.isoformat() if self.file_modified_at else None,
        }


@dataclass
class _NewImageFields:
    path: str
    sha256: str
    width: int
    height: int
    bytes: int
    title: str | None = None
    caption: str | None = None
    tags: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class NewImage(PhotoFacts, _NewImageFields):
    """What the indexer knows about an image before it has an id: its fields, then its photo facts."""


class MetadataStore(SqlStore):
    """The ``images`` table behind a small API; safe to share between threads."""

    def __init__(
        self, url: str, schema: str | None = None, timeout: float | None = None, cache_dir: Path | None = None
    ) -> None:
        super().__init__(url, Base.metadata, schema, timeout)
        self.cache_dir = cache_dir  # where the gazetteer's arrays are kept (indexer/places.py)
        # Indexes made before issue 27 lack the photo-fact columns: added in place (nullable, so instant).
        self.migrated = add_missing_columns(self.engine, Base.metadata.tables["images"], schema)

    # ------------------------------------------------------------------ reads
    def count(self) -> int:
        with self._sessions() as session:
            return int(session.scalar(select(func.count(ImageRow.id))) or 0)

    def total_bytes(self) -> int:
        with self._sessions() as session:
            return int(session.scalar(select(func.coalesce(func.sum(ImageRow.bytes), 0))) or 0)

    def ids(self) -> list[int]:
        with self._sessions() as session:
            return [int(i) for i in session.scalars(select(ImageRow.id).order_by(ImageRow.id))]

    def id_keys(self, ids: Sequence[int] | None = None) -> list[tuple[int, str, str]]:
        """``(id, sha256, path)`` of the given ids (all images when ``ids`` is None), by id."""
        query = select(ImageRow.id, ImageRow.sha256, ImageRow.path).order_by(ImageRow.id)
        with self._sessions() as session:
            if ids is None:
                return [(int(i), s, p) for i, s, p in session.execute(query)]
            out: list[tuple[int, str, str]] = []
            unique = sorted(set(ids))
            for start in range(0, len(unique), BATCH):
                chunk = unique[start : start + BATCH]
                out += [(int(i), s, p) for i, s, p in session.execute(query.where(ImageRow.id.in_(chunk)))]
            return sorted(out)

    def by_paths(self, paths: Sequence[str]) -> dict[str, tuple[int, str]]:
        """``path -> (id, sha256)`` for the paths already indexed."""
        found: dict[str, tuple[int, str]] = {}
        unique = list(dict.fromkeys(paths))
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                chunk = unique[start : start + BATCH]
                query = select(ImageRow.path, ImageRow.id, ImageRow.sha256).where(ImageRow.path.in_(chunk))
                found.update({p: (int(i), s) for p, i, s in session.execute(query)})
        return found

    def by_sha256(self, sha256: str) -> ImageRecord | None:
        with self._sessions() as session:
            row = session.scalars(select(ImageRow).where(ImageRow.sha256 == sha256).order_by(ImageRow.id)).first()
            return ImageRecord.from_row(row) if row else None

    def rows_with_sha256(self, hashes: Sequence[str]) -> dict[str, list[tuple[int, str]]]:
        """``sha256 → [(id, path), …]`` (by id) of the rows with those content hashes."""
        found: dict[str, list[tuple[int, str]]] = {}
        unique = list(dict.fromkeys(hashes))
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                chunk = unique[start : start + BATCH]
                query = select(ImageRow.sha256, ImageRow.id, ImageRow.path).where(ImageRow.sha256.in_(chunk))
                for sha, id_, path in session.execute(query.order_by(ImageRow.id)):
                    found.setdefault(sha, []).append((int(id_), str(path)))
        return found

    def move(self, moves: Sequence[tuple[int, str, str]]) -> None:
        """Re-point rows to the new path (and folder) of their file, ``(id, path, folder)``, in one transaction:
        a photo moved or renamed keeps its id, its vector and its user metadata (issue 36)."""
        with self.transaction() as session:
            for id_, path, folder in moves:
                row = session.get(ImageRow, int(id_))
                if row is not None:
                    row.path, row.folder = path, folder

    def known_sha256(self, hashes: Sequence[str]) -> set[str]:
        """The content hashes among ``hashes`` that some image has."""
        found: set[str] = set()
        unique = list(dict.fromkeys(hashes))
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                chunk = unique[start : start + BATCH]
                found.update(session.scalars(select(ImageRow.sha256).where(ImageRow.sha256.in_(chunk))))
        return found

    def missing_facts(self, ids: Sequence[int]) -> set[int]:
        """The ids among ``ids`` whose photo facts were never read (rows from before the migration)."""
        found: set[int] = set()
        unique = sorted({int(i) for i in ids})
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                chunk = unique[start : start + BATCH]
                query = select(ImageRow.id).where(ImageRow.id.in_(chunk), ImageRow.folder.is_(None))
                found.update(int(i) for i in session.scalars(query))
        return found

    def set_facts(self, changes: Sequence[tuple[int, dict[str, Any]]]) -> None:
        """Store photo facts (:data:`FACTS`) read from the files, in one transaction."""
        with self.transaction() as session:
            for id_, fields in changes:
                unknown = set(fields) - set(FACTS)
                if unknown:
                    raise ValueError(f"not photo facts: {sorted(unknown)}")
                row = session.get(ImageRow, int(id_))
                if row is not None:
                    for name, value in fields.items():
                        setattr(row, name, value)

    def filtered_ids(self, where: PhotoFilter) -> np.ndarray:
        """Sorted ids of the images that pass ``where`` (the subset a filtered vector search is restricted to)."""
        clauses: list[Any] = []
        if where.taken_after is not None:
            clauses.append(ImageRow.taken_at >= where.taken_after)
        if where.taken_before is not None:
            clauses.append(ImageRow.taken_at <= where.taken_before)
        if where.folder is not None:
            clauses.append(self._folder_clause(where.folder))
        if where.place is not None:
            clauses.append(self._place_clause(where.place))
        columns: list[Any] = [ImageRow.id]
        near = self._located(where.near) if where.near is not None else None
        if near is not None:
            box = near.box()
            assert box is not None
            clauses += [ImageRow.latitude.between(box[0], box[1]), ImageRow.longitude.between(box[2], box[3])]
            columns += [ImageRow.latitude, ImageRow.longitude]
        query = select(*columns).where(*clauses)
        with self.engine.connect() as connection:  # Core, no ORM rows: 100,000 ids in tens of ms
            if near is None:
                ids = np.fromiter((row[0] for row in connection.execute(query)), dtype=np.int64)
            else:
                found = connection.execute(query).all()
                ids = np.fromiter(
                    (r[0] for r in found if distance_km(near.latitude, near.longitude, r[1], r[2]) <= near.km),
                    dtype=np.int64,
                )
        return np.sort(ids)

    def folder_values(self) -> list[str]:
        """The distinct folders of the indexed photos (one index-only scan of the folder column)."""
        with self.engine.connect() as connection:
            query = select(ImageRow.folder).where(ImageRow.folder.is_not(None)).distinct()
            return [str(folder) for (folder,) in connection.execute(query)]

    def _folder_clause(self, folder: str) -> Any:
        """An absolute folder: itself and below, as typed (a path). Anything else: the folders whose path has a
        word starting with it, folded (:mod:`indexer.folder_names`); none → :class:`FolderNotFoundError` with
        the folders whose names come close."""
        if folder.startswith("/"):
            return _subtree_clause(folder, self.engine.dialect.name)
        known = self.folder_values()
        found = matching_folders(folder, known)
        if not found:
            raise FolderNotFoundError(folder, close_folder_names(folder, known))
        return or_(*(ImageRow.folder.in_(found[start : start + BATCH]) for start in range(0, len(found), BATCH)))

    # ------------------------------------------------------------------ places (issue 36)
    def place_names(self) -> PlaceNames:
        return place_names(self.cache_dir)

    def _located(self, near: Near) -> Near:
        """``near`` with its centre looked up when it was given by name (``Lisbon,25``)."""
        if near.place is None:
            return near
        name = near.place.split(",")[0].strip()
        found = self.place_names().locate(name)
        if found is None:
            raise PlaceNotFoundError(f"near: no place called {name[:100]!r} is known (try 'latitude,longitude,km')")
        return near.located(found[0], found[1])

    def place_values(self) -> dict[str, list[str]]:
        """The distinct city, region and country names of the indexed photos."""
        out: dict[str, list[str]] = {}
        with self.engine.connect() as connection:
            for name in ("city", "region", "country"):
                column = getattr(ImageRow, name)
                query = select(column).where(column.is_not(None)).distinct()
                out[name] = [str(value) for (value,) in connection.execute(query)]
        return out

    def _place_clause(self, place: str) -> Any:
        """Every comma-separated part names the city, region or country: the start of a word of it (folded, as
        folder names) or another name of it (Lisboa → Lisbon); no photo's place → :class:`PlaceNotFoundError`."""
        known = self.place_values()
        names = self.place_names()
        clauses: list[Any] = []
        for part in (part.strip() for part in place.split(",")):
            if not part:
                continue
            meant = names.resolve(part)
            alternatives = []
            for column, values in known.items():
                found = [value for value in values if value in meant or matching_folders(part, [value])]
                if found:
                    alternatives.append(getattr(ImageRow, column).in_(found))
            if not alternatives:
                everything = [value for values in known.values() for value in values]
                close = close_folder_names(part, everything)
                hint = f"; places with close names: {', '.join(repr(name) for name in close)}" if close else ""
                raise PlaceNotFoundError(f"no photo's place matches {part[:100]!r}{hint}", close)
            clauses.append(or_(*alternatives))
        return and_(*clauses)

    def unnamed_positions(self) -> list[tuple[int, float, float]]:
        """``(id, latitude, longitude)`` of photos with GPS but no place name (indexed before issue 36, or far
        from any place: naming those again costs microseconds)."""
        query = select(ImageRow.id, ImageRow.latitude, ImageRow.longitude).where(
            ImageRow.latitude.is_not(None),
            ImageRow.longitude.is_not(None),
            ImageRow.city.is_(None),
            ImageRow.region.is_(None),
            ImageRow.country.is_(None),
        )
        found: list[tuple[int, float, float]] = []
        with self.engine.connect() as connection:
            for id_, lat, lon in connection.execute(query):
                if lat is not None and lon is not None:
                    found.append((int(id_), float(lat), float(lon)))
        return found

    def paths_under(self, folder: str) -> list[tuple[int, str]]:
        """``(id, path)`` of the images whose file lies in ``folder`` or below (the folder watcher)."""
        below = folder.rstrip("/") + "/"
        column: Any = ImageRow.path.collate("C") if self.engine.dialect.name == "postgresql" else ImageRow.path
        query = select(ImageRow.id, ImageRow.path).where(column >= below, column < below[:-1] + "0")
        with self._sessions() as session:
            return [(int(i), str(p)) for i, p in session.execute(query)]

    def ids_under(self, folder: str) -> list[int]:
        return [id_ for id_, _ in self.paths_under(folder)]

    def places(self, ids: Sequence[int]) -> dict[int, Place]:
        """City, region and country of the given ids (``polyglot search``'s answer)."""
        out: dict[int, Place] = {}
        unique = sorted({int(i) for i in ids})
        columns = (ImageRow.id, ImageRow.city, ImageRow.region, ImageRow.country)
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                query = select(*columns).where(ImageRow.id.in_(unique[start : start + BATCH]))
                out.update(
                    {int(i): Place(city, region, country) for i, city, region, country in session.execute(query)}
                )
        return out

    def taken(self, ids: Sequence[int]) -> dict[int, datetime | None]:
        """Capture times of the given ids (sort=date)."""
        out: dict[int, datetime | None] = {}
        unique = sorted({int(i) for i in ids})
        with self._sessions() as session:
            for start in range(0, len(unique), BATCH):
                chunk = unique[start : start + BATCH]
                query = select(ImageRow.id, ImageRow.taken_at).where(ImageRow.id.in_(chunk))
                out.update({int(i): t.replace(tzinfo=None) if t else None for i, t in session.execute(query)})
        return out

    def get(self, id_: int) -> ImageRecord | None:
        with self._sessions() as session:
            row = session.get(ImageRow, int(id_))
            return ImageRecord.from_row(row) if row else None

    def page(self, offset: int = 0, limit: int = 100) -> list[ImageRecord]:
        query = select(ImageRow).order_by(ImageRow.id).offset(max(0, offset)).limit(max(0, limit))
        with self._sessions() as session:
            return [ImageRecord.from_row(row) for row in session.scalars(query)]

    # ------------------------------------------------------------------ writes
    def insert(self, images: Sequence[NewImage], replace_ids: Sequence[int] = ()) -> list[ImageRecord]:
        """Delete ``replace_ids`` and insert ``images`` in one transaction; returns the new records in order."""
        now = datetime.now(UTC)
        with self.transaction() as session:
            if replace_ids:
                self._delete(session, replace_ids)
                session.flush()  # the replaced rows must be gone before their paths are inserted again
            rows = [ImageRow(added_at=now, **image.__dict__) for image in images]
            session.add_all(rows)
            session.flush()  # assigns the ids
            return [ImageRecord.from_row(row) for row in rows]

    def delete(self, ids: Sequence[int]) -> list[int]:
        """Delete rows by id in one transaction; returns the ids that existed."""
        with self.transaction() as session:
            return self._delete(session, ids)

    def update(self, id_: int, **fields: Any) -> ImageRecord | None:
        """Change user metadata (title, caption, tags, extra) of one image."""
        return self.update_many([(id_, fields)])[0]

    def update_many(self, changes: Sequence[tuple[int, dict[str, Any]]]) -> list[ImageRecord | None]:
        """Several metadata updates in one transaction (None for ids that do not exist)."""
        for _, fields in changes:
            unknown = set(fields) - _EDITABLE
            if unknown:
                raise ValueError(f"cannot update {sorted(unknown)}; editable fields: {sorted(_EDITABLE)}")
        out: list[ImageRow | None] = []
        with self.transaction() as session:
            for id_, fields in changes:
                row = session.get(ImageRow, int(id_))
                if row is not None:
                    for name, value in fields.items():
                        setattr(row, name, value)
                out.append(row)
            session.flush()
            return [ImageRecord.from_row(row) if row is not None else None for row in out]

    @staticmethod
    def _delete(session: Session, ids: Sequence[int]) -> list[int]:
        gone: list[int] = []
        unique = sorted({int(i) for i in ids})
        for start in range(0, len(unique), BATCH):
            chunk = unique[start : start + BATCH]
            rows = list(session.scalars(select(ImageRow).where(ImageRow.id.in_(chunk))))
            for row in rows:
                gone.append(int(row.id))
                session.delete(row)
        return sorted(gone)


def _subtree_clause(folder: str, dialect: str) -> Any:
    """A folder and below, as a range of the folder index (``X/`` ≤ folder < ``X0``: "0" follows "/" in every
    collation that sorts by code point, so the B-tree answers it; a LIKE could not use the index on SQLite).
    PostgreSQL compares in the "C" collation for this (a locale collation may ignore the slashes). Case-sensitive,
    as an absolute path is on Linux."""
    if folder == "/":
        return ImageRow.folder.startswith("/")
    column: Any = ImageRow.folder.collate("C") if dialect == "postgresql" else ImageRow.folder
    return or_(ImageRow.folder == folder, and_(column >= folder + "/", column < folder + "0"))
