"""Exception handlers: what the service answers when a request fails in a way no router anticipated.

* ``MemoryError`` → 503 with a message and ``Retry-After``: the request asked for more memory than the process
  could get (a transient state of this server, not a client mistake: images are bounded before decoding, see
  :mod:`indexer.images`). Without this handler it was a 500, and the worker went on with whatever was left.
* A query text with nothing visible in it, or over ``POLYGLOT_MAX_QUERY_CHARS`` (the query pipeline's
  :class:`~indexer.query.QueryTextError`, raised by every text endpoint) → 422 with its message; so is a photo
  filter found wrong only once the index is read (a folder name that matches no folder, with ``close_folders``; a
  place that names no photo's place, with ``close_places``).
* Validation errors (422) keep FastAPI's ``detail`` list but cap every echoed ``input``: a 2,000-character
  query came back whole, and a multi-kilobyte form field would too.
* A backend outage (the metadata database or the vector server unreachable, :class:`BackendUnavailableError`
  and SQLAlchemy's connection errors) → 503 with a JSON ``detail`` and ``Retry-After``
  (``POLYGLOT_OUTAGE_RETRY_AFTER_SECONDS``); no space for a write (:class:`DiskFullError`) → 507 likewise. They
  are logged once per ``POLYGLOT_ERROR_LOG_INTERVAL_SECONDS`` and kind, with the count since the last line: a
  35-s Milvus outage under load once wrote 6,508 tracebacks (15 MB). The answer names the backend, or the kind of
  folder that is full (the index, cache or home folder, by its setting), never a host, port or server path: those
  are in the log line only (a 503 once answered the database's host and port, a 507 the index folder's path).
* A method the path does not have → 405 whose ``Allow`` lists all the methods the path has (every route of it).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from starlette.routing import Match, Mount

from indexer.query.pipeline import QueryTextError
from indexer.search_filters import FilterError, FolderNotFoundError, PlaceNotFoundError
from indexer.store.failures import BackendUnavailableError, DiskFullError, first_line, is_disk_full

log = logging.getLogger("app.errors")

ECHO_CHARS = 100  # longest string echoed back in a 422's "input"
ECHO_ITEMS = 20  # most items of a list or mapping echoed back
RETRY_AFTER_SECONDS = 30


def capped(value: Any, depth: int = 0) -> Any:
    """``value`` with long strings cut to ``ECHO_CHARS`` (marked with "…") and long containers to ``ECHO_ITEMS``."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value if len(value) <= ECHO_CHARS else value[:ECHO_CHARS] + "…"
    if depth >= 3:
        return "…"
    if isinstance(value, Mapping):
        items = list(value.items())
        out = {str(capped(k, depth + 1)): capped(v, depth + 1) for k, v in items[:ECHO_ITEMS]}
        if len(items) > ECHO_ITEMS:
            out["…"] = f"{len(items) - ECHO_ITEMS} more"
        return out
    if isinstance(value, list | tuple | set | frozenset):
        values = list(value)
        out_list = [capped(v, depth + 1) for v in values[:ECHO_ITEMS]]
        return [*out_list, "…"] if len(values) > ECHO_ITEMS else out_list
    return capped(str(value), depth)  # an UploadFile, a model: its text form, capped


async def validation_error(_request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = []
    for error in exc.errors():
        error = dict(error)
        if "input" in error:
            error["input"] = capped(error["input"])
        if "ctx" in error:
            error["ctx"] = capped(error["ctx"])
        errors.append(error)
    return JSONResponse({"detail": jsonable_encoder(errors)}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def out_of_memory(request: Request, _exc: Exception) -> JSONResponse:
    log.warning("out of memory while answering a request", extra={"path": request.url.path})
    return JSONResponse(
        {"detail": "the server ran out of memory answering this request; retry later, or send a smaller image"},
        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


@dataclass
class _Seen:
    last_logged: float
    count: int = 0  # occurrences since the last line


class ThrottledLog:
    """Log an error of one kind at most once per ``interval`` seconds, with how many times it happened since."""

    def __init__(self, logger: logging.Logger, interval: float) -> None:
        self.logger = logger
        self.interval = interval
        self._seen: dict[str, _Seen] = {}
        self._lock = threading.Lock()

    def error(self, kind: str, message: str, **extra: Any) -> bool:
        """Count one occurrence; log it (returns True) when it is the first of its kind or ``interval`` has passed."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(kind)
            if seen is None:
                seen = self._seen[kind] = _Seen(last_logged=now - self.interval)
            seen.count += 1
            if now - seen.last_logged < self.interval:
                return False
            count, seen.count, seen.last_logged = seen.count, 0, now
        self.logger.error(message, extra={"kind": kind, "count": count, **extra})
        return True


def _outage(request: Request, kind: str, detail: str, code: int, logged: str | None = None) -> JSONResponse:
    """``detail`` for the client; ``logged`` (with hosts, ports, paths) for the log only."""
    throttled: ThrottledLog = request.app.state.error_log
    throttled.error(kind, logged or detail, path=request.url.path)
    retry_after = request.app.state.settings.service.outage_retry_after_seconds
    return JSONResponse({"detail": detail}, status_code=code, headers={"Retry-After": str(retry_after)})


def backend_detail(backend: str) -> str:
    """What a client is told of a backend outage: which backend, never where it is (host, port: the log has it)."""
    return f"the {backend} backend is unavailable; retry later"


async def backend_unavailable(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BackendUnavailableError)
    detail = backend_detail(exc.backend)
    return _outage(request, f"{exc.backend}-unavailable", detail, status.HTTP_503_SERVICE_UNAVAILABLE, str(exc))


def folder_kind(settings: Any, folder: Path) -> str:
    """The setting-named kind of folder ``folder`` is in (the innermost of the cache, index and home folders)."""
    places = [
        (settings.resolved_cache_dir, "the cache folder (POLYGLOT_CACHE_DIR)"),
        (settings.resolved_index_dir, "the index folder (POLYGLOT_INDEX_DIR)"),
        (settings.home, "the home folder (POLYGLOT_HOME)"),
    ]
    target = Path(os.path.abspath(folder))
    inside = [(Path(os.path.abspath(root)), name) for root, name in places]
    inside = [(root, name) for root, name in inside if target == root or target.is_relative_to(root)]
    return max(inside, key=lambda place: len(place[0].parts))[1] if inside else "the server's storage"


async def disk_full(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DiskFullError)
    detail = exc.public_detail(folder_kind(request.app.state.settings, exc.folder))
    return _outage(request, "disk-full", detail, status.HTTP_507_INSUFFICIENT_STORAGE, str(exc))


async def database_error(request: Request, exc: Exception) -> JSONResponse:
    """SQLAlchemy's connection-level errors that reached a route without passing through the index's translation
    (reads: metadata of a result page, ``/images/{id}/info``)."""
    if is_disk_full(exc):
        detail = "no space left for the metadata database; free some space there and retry"
        return _outage(request, "disk-full", detail, 507, first_line(exc))
    detail = backend_detail("database")
    return _outage(request, "database-unavailable", detail, status.HTTP_503_SERVICE_UNAVAILABLE, first_line(exc))


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


async def method_not_allowed(request: Request, exc: Exception) -> JSONResponse:
    """405 with an ``Allow`` header that lists every method of the path. Starlette's names only the first route
    whose path matched, and FastAPI makes one route per method: ``OPTIONS /v1/images`` answered ``allow: GET``
    although POST exists, ``/v1/images/1`` left out HEAD and DELETE. Each method is asked of the router's routes
    (included routers too) as if the request had used it."""
    routes = [route for route in request.app.router.routes if not isinstance(route, Mount)]
    allowed = [
        method
        for method in HTTP_METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]
    # A mount matches every method; the one mounted here serves static files (the page's script and style).
    allowed = allowed or ["GET", "HEAD"]
    return JSONResponse(
        {"detail": getattr(exc, "detail", "Method Not Allowed")},
        status_code=status.HTTP_405_METHOD_NOT_ALLOWED,
        headers={"Allow": ", ".join(allowed)},
    )


async def bad_query_text(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc)}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


async def bad_filter(request: Request, exc: Exception) -> JSONResponse:
    """A photo filter found wrong once the index is read: a folder name that matches no folder (with the names of
    folders that come close, for a page to offer)."""
    body: dict[str, Any] = {"detail": str(exc)}
    if isinstance(exc, FolderNotFoundError):
        body["close_folders"] = exc.close
    if isinstance(exc, PlaceNotFoundError) and exc.close:
        body["close_places"] = exc.close
    return JSONResponse(body, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def install(app: FastAPI, log_interval: float = 10.0) -> None:
    app.state.error_log = ThrottledLog(log, log_interval)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(status.HTTP_405_METHOD_NOT_ALLOWED, method_not_allowed)
    app.add_exception_handler(QueryTextError, bad_query_text)
    app.add_exception_handler(FilterError, bad_filter)
    app.add_exception_handler(MemoryError, out_of_memory)
    app.add_exception_handler(BackendUnavailableError, backend_unavailable)
    app.add_exception_handler(DiskFullError, disk_full)
    app.add_exception_handler(sa_exc.OperationalError, database_error)
    app.add_exception_handler(sa_exc.InterfaceError, database_error)
