"""The checks made when an image index folder is opened: is there an index, is its metadata database there, was it
built with the configured image encoder, and are its vectors in the image space the text tower expects? Each
refusal says what to do.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote

from indexer.encoders.base import ImageEncoder
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.store.sidecar import DB_NAME, Sidecar
from indexer.store.vectors import FAISS_NAME


class IndexMismatchError(ValueError):
    """The index on disk was built with another image encoder or image space than the one asked for."""


class IndexNotFoundError(FileNotFoundError):
    """No index in the folder and ``create=False``."""


class MetadataMissingError(IndexMismatchError):
    """The sidecar says the folder holds vectors, but its SQLite metadata database is gone (or is an empty file), or
    the database server of ``POLYGLOT_DATABASE_URL`` has no photo table or no photo rows.

    Opening it anyway would create an empty database, and the crash repair that follows would then drop every
    vector, since no row claims them: one incomplete copy of the folder would cost the whole index. A subclass of
    :class:`IndexMismatchError` because every caller treats it as one: the folder's files disagree with its
    sidecar, refused in one line (the CLI: exit 2) with nothing in the folder changed.
    """


class IndexFileCorruptError(IndexMismatchError):
    """A file of the index folder is not what it should be (garbage, cut off, another format): the metadata
    database (``part="metadata"``) or the vector file (``part="vectors"``). Refused in one line that says what to run
    (the CLI: exit 2), with nothing in the folder changed. A subclass of :class:`IndexMismatchError`, as
    :class:`MetadataMissingError` is: every caller already refuses that in one line."""

    def __init__(self, part: str, message: str) -> None:
        self.part = part
        super().__init__(message)


def _detail(exc: BaseException) -> str:
    text = " ".join(str(getattr(exc, "orig", None) or exc).split())
    text = re.sub(r"^Error in .*? at \S+:\d+: ", "", text)  # FAISS's C++ function and source line
    return text if len(text) <= 160 else text[:157] + "..."


def corrupt_metadata(folder: Path, where: str, exc: BaseException) -> IndexFileCorruptError:
    """The refusal of a metadata database that SQLite cannot read as one (``where``: its file or redacted URL)."""
    return IndexFileCorruptError(
        "metadata",
        f"the index in {folder} cannot be opened: its metadata database {where} is damaged ({_detail(exc)}); "
        f"nothing was changed. Put back a good copy of it (from a backup of the folder), or move the folder aside "
        "(or point POLYGLOT_INDEX_DIR at a new folder) and run `polyglot index add PATH...` "
        "(`polyglot index rebuild` cannot help: it re-derives the vectors from this database)",
    )


def corrupt_vectors(folder: Path, path: Path, exc: BaseException) -> IndexFileCorruptError:
    """The refusal of a vector file FAISS cannot read; ``polyglot index rebuild`` re-derives it from the rows."""
    return IndexFileCorruptError(
        "vectors",
        f"the index in {folder} cannot be opened: its vector file {path} is damaged ({_detail(exc)}); its photos' "
        "metadata is intact: run `polyglot index rebuild` to re-derive the vectors from it (features cache, "
        "re-encoding the photos it lacks)",
    )


# SQLite's primary result codes for a file that is not a database, or one whose pages are damaged.
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def is_corrupt_sqlite(exc: BaseException) -> bool:
    """Whether ``exc`` (SQLite's, or SQLAlchemy's wrapping it) says the file is not a database or is damaged, as
    opposed to locked, missing or unreadable (which the opener reports as they are)."""
    cause = getattr(exc, "orig", None) or exc
    code = getattr(cause, "sqlite_errorcode", None)
    return (
        isinstance(cause, sqlite3.DatabaseError)
        and code is not None
        and code & 0xFF
        in (
            _SQLITE_CORRUPT,
            _SQLITE_NOTADB,
        )
    )


def check_sqlite_file(folder: Path, path: Path) -> None:
    """Refuse (:class:`IndexFileCorruptError`) a metadata file SQLite cannot read as a database; only reads (no
    journal mode set, nothing created). A missing file, a lock or a permission problem pass: the opener's own
    connection reports those."""
    if not path.is_file():
        return
    try:
        connection = connect_read_only(path, _TABLE_CHECK_TIMEOUT_SECONDS)
        try:
            connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
        finally:
            connection.close()
    except sqlite3.Error as exc:
        if is_corrupt_sqlite(exc):
            raise corrupt_metadata(folder, str(path), exc) from None


# The table of photo rows (indexer/store/metadata.py's ImageRow), named here rather than imported: that module is
# SQLAlchemy, which `polyglot search`'s read-only opener (indexer/store/read_only.py) never loads.
IMAGES_TABLE = "images"
_TABLE_CHECK_TIMEOUT_SECONDS = 5.0


def default_image_space(settings: Settings) -> ImageSpace:
    """The image space the text tower was trained for (its config.json), else plain ``l2``."""
    from indexer.asset_paths import shipped_tower_path

    config_path = (settings.models.tower_path or shipped_tower_path(settings.models.text_encoder)) / "config.json"
    if config_path.exists():
        config = json.loads(config_path.read_text(encoding="utf-8"))
        return ImageSpace.from_config(config.get("image_space"))
    return ImageSpace("l2")


def space_config(space: ImageSpace) -> dict[str, Any]:
    """How the sidecar records an image space: its config plus its fingerprint."""
    return {**space.to_config(), "fingerprint": space.fingerprint}


def read_sidecar(folder: Path, *, create: bool) -> Sidecar | None:
    """The folder's sidecar; ``None`` for a new index, which only ``create`` allows."""
    sidecar = Sidecar.load(folder)
    if sidecar is None and not create:
        raise IndexNotFoundError(f"no index in {folder} (run `polyglot index add PATH...` first)")
    return sidecar


def holds_vectors(folder: Path, sidecar: Sidecar) -> bool:
    """Whether the folder has vectors to lose: the sidecar counts some, names a set other than a new index's, or a
    FAISS file is there (a first add killed after its checkpoint wrote the file, before the sidecar counted it)."""
    return sidecar.count > 0 or sidecar.files.get("vectors", FAISS_NAME) != FAISS_NAME or (folder / FAISS_NAME).exists()


def connect_read_only(path: Path, timeout: float, *, check_same_thread: bool = True) -> sqlite3.Connection:
    """A connection to the SQLite file at ``path`` that can only read: ``mode=ro`` never creates or changes the file
    (what a plain connect would do to a missing one), sets no journal mode and makes no table; a WAL database is read
    through its shared-memory file, as any reader reads it while a writer commits. ``timeout``: the longest wait
    for a writer's lock. :class:`sqlite3.Error` when it cannot be opened."""
    return sqlite3.connect(
        f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=timeout, check_same_thread=check_same_thread
    )


def _has_images_table(path: Path) -> bool | None:
    """Whether the SQLite file at ``path`` has the photos' table; None when that cannot be told now (locked past the
    wait, not a database, unreadable): the opener's own connection then reports it, as it always did."""
    try:
        connection = connect_read_only(path, _TABLE_CHECK_TIMEOUT_SECONDS)
    except sqlite3.Error:
        return None
    try:
        found = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (IMAGES_TABLE,)
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    return found is not None


def _server_images(database_url: str, timeout: float | None) -> bool | None:
    """Whether the photos' table at ``database_url`` (a database server) holds a row; None: it has no such table.
    Only reads: no table is created, nothing is written."""
    from sqlalchemy import inspect, text

    from indexer.store.sql import create_sql_engine

    engine = create_sql_engine(database_url, timeout=timeout)
    try:
        with engine.connect() as connection:
            # Unqualified, as MetadataStore's tables are: the URL's search_path (a schema per index) applies.
            if not inspect(connection).has_table(IMAGES_TABLE):
                return None
            quoted = engine.dialect.identifier_preparer.quote(IMAGES_TABLE)
            return connection.execute(text(f"SELECT 1 FROM {quoted} LIMIT 1")).first() is not None
    finally:
        engine.dispose()


def _server_problem(folder: Path, database_url: str, timeout: float | None) -> str | None:
    """What is missing at ``database_url`` for an index that holds vectors, or None when its rows are there."""
    from sqlalchemy.engine import make_url

    from indexer.store.failures import translated
    from indexer.store.sql import redact_url

    url = make_url(database_url)
    if url.get_backend_name() == "sqlite":  # a file elsewhere: connecting would create a missing one
        if not url.database or url.database == ":memory:":
            return None
        return _sqlite_file_problem(Path(url.database), " (POLYGLOT_DATABASE_URL)")
    with translated(folder):  # a server that is down: the opener's own one-line outage error
        found = _server_images(database_url, timeout)
    where = f"the database at {redact_url(database_url)} (POLYGLOT_DATABASE_URL)"
    if found is None:
        return f"{where} has no {IMAGES_TABLE} table (an empty or another database)"
    if not found:
        return f"{where} holds no photo rows (its {IMAGES_TABLE} table is empty: a new or another database)"
    return None


def _sqlite_file_problem(path: Path, named_by: str = "") -> str | None:
    """What is wrong with the SQLite metadata file at ``path`` for an index that holds vectors, or None: missing (a
    dangling link too: SQLite would create the file it points to), or a file without the photos' table."""
    if not path.exists():
        return f"its metadata database {path}{named_by} is missing"
    if _has_images_table(path) is False:
        return f"its metadata database {path}{named_by} holds no photo table (an empty or new file)"
    return None


def check_metadata(
    folder: Path, sidecar: Sidecar | None, database_url: str | None, timeout: float | None = None
) -> None:
    """Refuse a folder whose vectors have lost their rows: the sidecar says it holds vectors, but ``metadata.sqlite``
    is missing, or is a file without the photos' table (an empty file, or one a process created after the real one
    was deleted); or, with ``database_url`` (``POLYGLOT_DATABASE_URL``), that database has no photo table or not one
    row in it (a fresh volume, the wrong database or schema, a folder restored without its dump). A new index (no
    sidecar, or no vectors yet) passes, and so does metadata older than the vectors that holds rows (a backup from
    another moment: the opener reconciles to what both contain). ``timeout``: the longest wait for a database
    server's answer; one that is down raises :class:`~indexer.store.failures.BackendUnavailableError`."""
    if sidecar is None or not holds_vectors(folder, sidecar):
        return
    held = f"{sidecar.count} photos" if sidecar.count else "vectors"
    kept = f"the index in {folder} holds {held} (index.json), but "
    start_over = (
        "or, to start over, move the folder aside (or point POLYGLOT_INDEX_DIR at a new folder) and run "
        "`polyglot index add PATH...` (`polyglot index rebuild` cannot help: it needs the metadata)"
    )
    if database_url is not None:
        problem = _server_problem(folder, database_url, timeout)
        if problem is None:
            return
        raise MetadataMissingError(
            f"{kept}{problem}; nothing was changed or created, the vectors are left as they are: point "
            "POLYGLOT_DATABASE_URL at the database that holds this index's metadata (or restore its dump there, "
            f"e.g. the pg_dump taken with the folder), {start_over}"
        )
    problem = _sqlite_file_problem(folder / DB_NAME)
    if problem is None:
        return
    raise MetadataMissingError(
        f"{kept}{problem}; nothing was changed, the vectors are left as "
        f"they are: put back the {DB_NAME} that belongs with them (from the copy or backup that lacks it, or the "
        "right volume; or set POLYGLOT_DATABASE_URL if this index keeps its metadata on a database server), "
        f"{start_over}"
    )


def check_encoder(folder: Path, sidecar: Sidecar | None, encoder: ImageEncoder) -> None:
    if sidecar is not None and sidecar.image_encoder != encoder.name:
        raise IndexMismatchError(
            f"the index in {folder} was built with image encoder {sidecar.image_encoder!r}, but "
            f"{encoder.name!r} is configured: set POLYGLOT_IMAGE_ENCODER={sidecar.image_encoder} to use it, "
            "or point POLYGLOT_INDEX_DIR at another folder to build a new index"
        )


def is_stale(folder: Path, sidecar: Sidecar | None, space: ImageSpace, *, rebuild_if_stale: bool) -> bool:
    """Whether the stored vectors are in another image space; refused unless the caller will rebuild them."""
    stale = sidecar is not None and sidecar.image_space_fingerprint != space.fingerprint
    if stale and not rebuild_if_stale:
        assert sidecar is not None
        raise IndexMismatchError(
            f"the index in {folder} stores vectors in image space {sidecar.image_space_fingerprint!r}, but the "
            f"text tower expects {space.fingerprint!r}: run `polyglot index rebuild`"
        )
    return stale


def create_sidecar(folder: Path, encoder: ImageEncoder, space: ImageSpace) -> Sidecar:
    """The sidecar of a new, empty index, saved in ``folder``."""
    sidecar = Sidecar(
        image_encoder=encoder.name,
        dim=encoder.dim or None,
        index_type="flat",
        image_space=space_config(space),
        files={"vectors": FAISS_NAME, "metadata": DB_NAME},
    )
    sidecar.save(folder)
    return sidecar
