"""Exception handlers: what the service answers when a request fails in a way no router anticipated.

* ``MemoryError`` → 503 with a message and ``Retry-After``: the request asked for more memory than the process
  could get (a transient state of this server, not a client mistake: images are bounded before decoding, see
  :mod:`indexer.images`). Without this handler it was a 500, and the worker went on with whatever was left.
* Validation errors (422) keep FastAPI's ``detail`` list but cap every echoed ``input``: a 2,000-character
  query came back whole, and a multi-kilobyte form field would too.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

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


def install(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(MemoryError, out_of_memory)
