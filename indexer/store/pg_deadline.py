"""PostgreSQL connections that never wait on the server for longer than a deadline.

A database that stops answering without refusing (packets dropped by a firewall or a dead link, or a proxy that
stops forwarding) left every request on an open pooled connection waiting forever: ``connect_timeout`` bounds only
new connections, and TCP notices nothing while the peer's side, or a proxy's, still acknowledges. Three bounds:

* :class:`DeadlineConnection` (the client side, which works whatever sits between): every wait of psycopg for the
  server — a query, a commit, a rollback, SQLAlchemy's pre-ping — is bounded by the deadline
  (``POLYGLOT_DATABASE_TIMEOUT_SECONDS``: 5 s in the service; unset, no deadline, in the CLI). When it passes, the connection is closed (its state is unknown: a
  query half sent, a result half read) and an ``OperationalError`` is raised; SQLAlchemy sees a closed connection,
  drops it from the pool, and the caller's outage handling answers 503.
* TCP keepalives and ``tcp_user_timeout`` (:func:`indexer.store.sql.libpq_options`): a connection whose peer
  vanished is noticed by the kernel, idle or not.
* ``statement_timeout`` (server side): a query the client gave up on does not keep running on the server.

Once a wait has expired, the engine's :class:`Outage` fails every call at once for the next ``seconds`` (a new
connection included) instead of letting each wait out its own deadline: with 4 database threads, 8 requests queued
behind a silent server took up to 2 × (pre-ping + reconnect) deadlines; now the first pays one deadline and the
others answer 503 at once. After the window one call tries the server again.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from sqlalchemy import Engine, event

TIMEOUT_SETTING = "POLYGLOT_DATABASE_TIMEOUT_SECONDS"


class Outage:
    """The database did not answer within the deadline a moment ago: calls fail at once until ``until``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.until = 0.0
        self._lock = threading.Lock()

    def check(self) -> None:
        """Raise while the window is open (nothing is sent to the server)."""
        if time.monotonic() < self.until:
            raise psycopg.OperationalError(
                f"the database did not answer within {self.seconds:g} s a moment ago ({TIMEOUT_SETTING}); "
                f"it is tried again {self.seconds:g} s after that"
            )

    def began(self) -> None:
        with self._lock:
            self.until = max(self.until, time.monotonic() + self.seconds)


class DeadlineConnection(psycopg.Connection):
    """A psycopg connection whose every wait for the server ends after ``outage.seconds``."""

    outage: Outage

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        try:
            self.outage.check()
        except psycopg.OperationalError:
            self.close()  # the pool drops it: connections are made afresh once the server answers again
            raise
        try:
            return super().wait(gen, interval, self.outage.seconds if timeout is None else timeout)
        except pg_errors.OperationalError as exc:
            if type(exc).__name__ != "_WaitTimeout":  # psycopg's own (private) class for an expired wait
                raise
            self.outage.began()
            self.close()  # mid-query: its state is unknown, it must not go back to the pool
            raise psycopg.OperationalError(
                f"the database did not answer within {self.outage.seconds:g} s ({TIMEOUT_SETTING})"
            ) from None


def bound(engine: Engine, seconds: float) -> None:
    """Make every connection of ``engine`` (``postgresql+psycopg``) a :class:`DeadlineConnection` of ``seconds``,
    sharing one :class:`Outage`, with the server's ``statement_timeout`` at the same bound."""
    outage = Outage(seconds)

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, cargs: Any, cparams: dict[str, Any]) -> DeadlineConnection:
        outage.check()
        try:
            connection = DeadlineConnection.connect(*cargs, **cparams)
        except psycopg.OperationalError as exc:
            if "timeout expired" in str(exc):  # connected, but the server never answered (refused is quick)
                outage.began()
            raise
        connection.outage = outage
        return connection

    @event.listens_for(engine, "connect")
    def _statement_timeout(dbapi_connection: Any, _record: Any) -> None:
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SET statement_timeout = {int(seconds * 1000)}")
        dbapi_connection.commit()
