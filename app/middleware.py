"""The HTTP layer around every request: pure ASGI middlewares (no BaseHTTPMiddleware: it costs a task and a
stream per request), in the order ``create_app`` stacks them, outermost first.

- :class:`RequestMetricsMiddleware` counts and times every request (Prometheus, :mod:`app.prometheus_metrics`)
  and, when enabled, logs one structured line per request.
- :class:`SecurityHeadersMiddleware` sets security headers on every answer: no MIME sniffing, no framing, no
  referrer; a strict CSP on the web page. The page (``/`` and ``/static``) loads only its own script, style and
  the images of this origin; image answers set their own, stricter policy (``default-src 'none'``,
  app/served_files.py) and keep it. ``/docs`` (Swagger UI loads from a CDN) is left without a CSP.
- :class:`BodyTimeoutMiddleware` closes requests whose body stalls: ``POLYGLOT_BODY_TIMEOUT_SECONDS`` without a
  byte, or the whole body not in after ``POLYGLOT_BODY_TOTAL_SECONDS`` (a body trickled at one byte every 20 s
  never tripped the gap alone) → 408 and the connection closes. uvicorn bounds idle keep-alive connections, not a request whose body
  never arrives: a client that announced a ``Content-Length`` and sent less held a connection (and a worker's
  form parsing) forever. On timeout it answers 408 (when nothing was answered yet) and tells the application the
  client left, and the server closes the connection, since the body was never read whole.
- :class:`BodyLimitMiddleware` refuses request bodies over the upload limit while they arrive (413), before they
  are buffered: a ``Content-Length`` over the limit is refused at once; a chunked body is counted as it streams
  and cut off as soon as it passes the limit. Multipart framing gets a small allowance over the file-size limit.
- :class:`HeadAsGetMiddleware` (innermost) answers ``HEAD`` wherever there is a ``GET``: the request goes to the
  ``GET`` handler and the answer's status and headers (``Content-Length`` included) are sent without its body.
  FastAPI routes a method only to a route declared with it, so ``HEAD /health``, ``/search`` or ``/`` answered 405.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anyio
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.prometheus_metrics import Metrics

log = logging.getLogger("app.requests")


# ------------------------------------------------------------------------------------------ metrics and logs
def _endpoint(scope: Scope) -> str:
    # The route template (/images/{image_id}), never the raw path: bounded label cardinality.
    path = getattr(scope.get("route"), "path", None)
    return str(path) if path else "unmatched"


class RequestMetricsMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware: it costs a task and a stream per request): count, time, log."""

    def __init__(self, app: ASGIApp, metrics: Metrics, log_requests: bool) -> None:
        self.app = app
        self.metrics = metrics
        self.log_requests = log_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status_code = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status_code
            if message["type"] == "http.response.start":
                status_code = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            elapsed = time.perf_counter() - start
            endpoint = _endpoint(scope)
            method = scope.get("method", "")
            self.metrics.requests.labels(method, endpoint, str(status_code)).inc()
            self.metrics.latency.labels(method, endpoint).observe(elapsed)
            if self.log_requests and log.isEnabledFor(logging.DEBUG):
                client = scope.get("client")
                log.debug(
                    "request",
                    extra={
                        "method": method,
                        "path": scope.get("path"),
                        "endpoint": endpoint,
                        "status": status_code,
                        "ms": round(elapsed * 1000, 2),
                        "client": client[0] if client else None,
                    },
                )


# ------------------------------------------------------------------------------------------ security headers
COMMON = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
}
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        page = path == "/" or path.startswith("/static/")

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in COMMON.items():
                    if name not in headers:
                        headers[name] = value
                if page and "content-security-policy" not in headers:
                    headers["content-security-policy"] = PAGE_CSP
            await send(message)

        await self.app(scope, receive, with_headers)


# ------------------------------------------------------------------------------------------ stalled bodies
class BodyTimeoutMiddleware:
    def __init__(self, app: ASGIApp, seconds: float, total_seconds: float | None = None) -> None:
        self.app = app
        self.seconds = seconds  # the longest gap between two parts of the body
        self.total_seconds = total_seconds  # the longest time for the whole body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = timed_out = body_done = False
        deadline = None if self.total_seconds is None else anyio.current_time() + self.total_seconds

        async def timed_receive() -> Message:
            nonlocal timed_out, body_done
            if timed_out:
                return {"type": "http.disconnect"}
            if body_done:  # the body is in: what follows is a wait for the client to leave, unbounded
                return await receive()
            wait, limit = self.seconds, "gap"
            if deadline is not None and deadline - anyio.current_time() < wait:
                wait, limit = max(0.0, deadline - anyio.current_time()), "total"
            with anyio.move_on_after(wait) as scope_:
                message = await receive()
            if scope_.cancelled_caught:
                timed_out = True
                if not started:
                    await _answer_408(send, self._detail(limit))
                return {"type": "http.disconnect"}
            if message["type"] == "http.request" and not message.get("more_body", False):
                body_done = True
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if timed_out:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, timed_receive, guarded_send)
        except Exception:
            if not timed_out:
                raise

    def _detail(self, limit: str) -> str:
        if limit == "total":
            return (
                f"the request body took too long: not received whole within {self.total_seconds:g} s "
                "(POLYGLOT_BODY_TOTAL_SECONDS)"
            )
        return f"the request body stalled: nothing received for {self.seconds:g} s (POLYGLOT_BODY_TIMEOUT_SECONDS)"


async def _answer_408(send: Send, detail: str) -> None:
    payload = json.dumps({"detail": detail}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 408,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


# ------------------------------------------------------------------------------------------ body size
_MULTIPART_ALLOWANCE = 64 * 1024


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.limit = max_bytes + _MULTIPART_ALLOWANCE
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None:
            try:
                too_large = int(length) > self.limit
            except ValueError:
                too_large = False  # the server rejects a malformed length itself
            if too_large:
                await self._refuse(send)
                return
        received = 0
        started = refused = False

        async def counting_receive() -> Message:
            nonlocal received, refused
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit and not refused:
                    # Answer now and tell the app the client left: it stops reading and its reply is dropped.
                    refused = True
                    if not started:
                        await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not refused:
                raise

    async def _refuse(self, send: Send) -> None:
        body: dict[str, Any] = {"detail": f"upload too large: the limit is {self.max_bytes:,} bytes (resize it first)"}
        payload = json.dumps(body).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})


# ------------------------------------------------------------------------------------------ HEAD
class HeadAsGetMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "HEAD":
            await self.app(scope, receive, send)
            return

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the parts of a streamed body: none is sent, the last one ends the answer
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, without_body)
