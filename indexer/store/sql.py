"""The one way to open a SQL store (image metadata, captions): a SQLite file by default, any database URL otherwise.

:class:`SqlStore` owns the engine, creates its tables and hands out transactions; subclasses add the typed
queries of their own table(s). SQLite gets the same pragmas everywhere, PostgreSQL an optional schema.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Engine, Integer, MetaData, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from indexer.store.failures import LOW_SPACE_BYTES, free_bytes, is_io_error, translated

# SQLite only autoincrements an "INTEGER PRIMARY KEY"; elsewhere ids are 64-bit like FAISS ids.
ID_TYPE = BigInteger().with_variant(Integer(), "sqlite")
CONNECT_TIMEOUT_SECONDS = 5  # a server that does not accept the connection: an outage, not a hang
BATCH = 900  # stay under SQLite's bound-parameter limit in IN (...) clauses


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def redact_url(url: str) -> str:
    """The URL without its password, for logs and stats."""
    return make_url(url).render_as_string(hide_password=True)


def libpq_options(timeout: float | None) -> dict[str, Any]:
    """libpq's bounds for a server that vanished: the connection's own time-out, keepalives (an idle connection
    whose peer is gone), and, with a ``timeout``, ``tcp_user_timeout`` (data the peer never acknowledged)."""
    seconds = timeout or CONNECT_TIMEOUT_SECONDS
    options = {
        "connect_timeout": max(2, round(seconds)),  # whole seconds, at least 2
        "keepalives": 1,
        "keepalives_idle": max(1, round(seconds)),
        "keepalives_interval": 1,
        "keepalives_count": 3,
    }
    if timeout is not None:
        options["tcp_user_timeout"] = int(timeout * 1000)
    return options


def create_sql_engine(
    url: str, schema: str | None = None, exclusive: bool = False, timeout: float | None = None
) -> Engine:
    """An engine for ``url``; ``schema`` puts unqualified tables in that (PostgreSQL) schema. ``exclusive``
    (SQLite): exclusive locking, one connection at a time (see :class:`SqlStore`). ``timeout`` (a database server):
    the longest wait for one answer (:mod:`indexer.store.pg_deadline`); None: connecting only is bounded."""
    # pre_ping: a pooled connection to a database server that restarted is replaced, not handed out dead (the first
    # request after an outage would fail although the server is back).
    options: dict[str, Any] = {}
    if url.startswith("postgresql"):
        # A dead server: fail, do not hang. libpq's options (psycopg 3 and 2): connect time-out, keepalives.
        options["connect_args"] = libpq_options(timeout)
    if exclusive:
        options["poolclass"] = NullPool  # each use takes the lock and gives it back when it closes
    engine = create_engine(url, future=True, pool_pre_ping=not url.startswith("sqlite"), **options)
    if timeout is not None and engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg":
        from indexer.store.pg_deadline import bound  # psycopg: imported for its URLs only

        bound(engine, timeout)  # and every answer within the time-out
    if engine.dialect.name == "sqlite":
        if exclusive:
            event.listen(engine, "connect", _sqlite_exclusive)
        event.listen(engine, "connect", _sqlite_pragmas)
    if schema:
        # One database can hold several indices (or test runs), each in its own schema.
        engine = engine.execution_options(schema_translate_map={None: schema})
    return engine


class SqlStore:
    """Tables of ``metadata`` in the database at ``url``, created if missing; safe to share between threads."""

    def __init__(self, url: str, metadata: MetaData, schema: str | None = None, timeout: float | None = None) -> None:
        self.url = url
        self.engine: Engine = create_sql_engine(url, schema, timeout=timeout)
        try:
            metadata.create_all(self.engine)
        except OperationalError as exc:
            folder = Path(make_url(url).database or ".").parent
            if self.engine.dialect.name != "sqlite" or free_bytes(folder) >= LOW_SPACE_BYTES or not is_io_error(exc):
                raise
            # A WAL database needs its shared-memory file beside it, which a full disk cannot hold: opening failed
            # with "disk I/O error". In exclusive locking mode SQLite keeps that index in memory instead, so the
            # index still opens (read-only in practice) until space returns.
            self.engine.dispose()
            self.engine = create_sql_engine(url, schema, exclusive=True)
            metadata.create_all(self.engine)
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def close(self) -> None:
        self.engine.dispose()

    @staticmethod
    def reachable(url: str, timeout: float | None = None) -> None:
        """Connect to the database at ``url`` once, or raise :class:`BackendUnavailableError` with the reason."""
        engine = create_sql_engine(url, timeout=timeout)
        try:
            with translated(Path(".")), engine.connect() as connection:
                connection.execute(text("SELECT 1"))
        finally:
            engine.dispose()

    def ping(self) -> None:
        """Raise unless the database answers a trivial query (``/ready``)."""
        with self.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """One transaction: committed if the block finishes, rolled back otherwise."""
        with self._sessions.begin() as session:
            yield session


def _sqlite_exclusive(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA locking_mode=EXCLUSIVE")  # before the first access: no shared-memory file needed
    cursor.close()


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL: the service keeps reading while an admin writes; FULL: a committed batch survives power loss.
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()
