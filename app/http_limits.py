"""Limits on a request's head (request line and headers), enforced by the HTTP server itself.

An ASGI application only sees a request once its whole head is parsed, so these are limits of the server's
protocol (uvicorn's ``httptools`` or ``h11`` implementation, subclassed here; ``polyglot serve`` runs them):

* a head over ``POLYGLOT_MAX_HEADER_BYTES`` (16 KB) is answered 431 and the connection closed, as soon as that
  many bytes are in: no header of 40 MB is read (it once was, answered 200, and the process grew 85 MB);
* a head not received whole within ``POLYGLOT_HEADER_TIMEOUT_SECONDS`` of its first byte is answered 408 and the
  connection closed: a head that trickles in a byte at a time held a connection 45 s and more, with no answer.

The request body has its own limits (:mod:`app.middleware`: size, gap and total time). Run under uvicorn directly,
the app gets these limits (at their defaults) with ``--http app.http_limits:GuardedHttpToolsProtocol``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEAD_TOO_LARGE = (
    "request headers too large: at most {limit:,} bytes of request line and headers (POLYGLOT_MAX_HEADER_BYTES)"
)
HEAD_TOO_SLOW = (
    "request headers took too long: not received whole within {seconds:g} s (POLYGLOT_HEADER_TIMEOUT_SECONDS)"
)


def _answer(status: int, reason: str, detail: str) -> bytes:
    body = json.dumps({"detail": detail}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _HeadGuard:
    """What both protocols share: the bytes of the head being received and its deadline."""

    max_head_bytes = 16 * 1024
    head_timeout = 10.0
    transport: asyncio.Transport
    loop: asyncio.AbstractEventLoop

    def _guard_init(self) -> None:
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False

    def _head_data(self, size: int) -> None:
        """``size`` bytes arrived while a head is expected: count them, start the head's clock at its first byte."""
        self._head_bytes += size
        if self._head_timer is None and not self._refused:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _head_done(self) -> None:
        self._head_bytes = 0
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _refuse(self, status: int, reason: str, detail: str, answer: bool = True) -> None:
        self._refused = True
        self._head_done()
        if not self.transport.is_closing():
            if answer:
                with contextlib.suppress(Exception):
                    self.transport.write(_answer(status, reason, detail))
            self.transport.close()

    def _head_too_large(self) -> None:
        self._refuse(431, "Request Header Fields Too Large", HEAD_TOO_LARGE.format(limit=self.max_head_bytes))

    def _head_timed_out(self) -> None:
        self._head_timer = None
        self._refuse(408, "Request Timeout", HEAD_TOO_SLOW.format(seconds=self.head_timeout), self._may_answer())

    def _may_answer(self) -> bool:
        """Whether no answer is being sent on the connection (an answer to a pipelined request may be)."""
        cycle = getattr(self, "cycle", None)
        return cycle is None or bool(cycle.response_complete)


class GuardedHttpToolsProtocol(_HeadGuard, HttpToolsProtocol):
    """uvicorn's ``httptools`` protocol with the head limits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard_init()
        self._in_head = True  # until the parser has the head whole; again once the message is complete
        self._head_exact = 0  # the bytes of the head's URL and headers, as parsed

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_data(len(data))
        super().data_received(data)  # a callback's _HeadTooLarge comes back through send_400_response (below)
        if self._refused:
            return
        if self._in_head and self._head_bytes > self.max_head_bytes:
            self._head_too_large()

    def send_400_response(self, msg: str) -> None:
        if self._head_bytes > self.max_head_bytes:  # raised from a callback below: the head, not the syntax
            self._head_too_large()
        else:
            super().send_400_response(msg)

    def on_message_begin(self) -> None:
        self._in_head = True
        self._head_exact = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count_exact(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_exact(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count_exact(self, size: int) -> None:
        # The head's own bytes (the chunk that ends it may carry the body too): a head over the limit whose
        # last part came with its end in one read is refused before any handler runs.
        self._head_exact += size
        if self._head_exact > self.max_head_bytes:
            self._head_bytes = self._head_exact
            raise _HeadTooLarge

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_done()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head = True
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_done()
        super().connection_lost(exc)


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the head passed the limit (the parser stops, the 431 is sent)."""


class GuardedH11Protocol(_HeadGuard, H11Protocol):
    """uvicorn's ``h11`` protocol with the head limits (h11 bounds an incomplete head itself, but answers 400)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._guard_init()
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.max_head_bytes)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        # IDLE: between requests, or a head partly in. A pipelined head, read while an answer is being sent, is
        # bounded by h11's buffer limit when it is parsed.
        if self.conn.their_state is h11.IDLE:
            self._head_data(len(data))
            pending = self.conn.trailing_data[0] + data  # under the limit but for this read
            end = pending.find(b"\r\n\r\n")
            if (end == -1 and len(pending) > self.max_head_bytes) or end + 4 > self.max_head_bytes:
                self._head_too_large()  # h11 bounds only a head still incomplete; this one may be whole
                return
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a request's head was parsed
            self._head_done()

    def send_400_response(self, msg: str) -> None:
        if len(self.conn.trailing_data[0]) > self.max_head_bytes:  # h11's "receive buffer too long"
            self._head_too_large()
        else:
            super().send_400_response(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        self._head_done()
        super().connection_lost(exc)


def served_protocol(settings: Any) -> type[asyncio.Protocol]:
    """:func:`guarded_protocol` with the service's settings (``POLYGLOT_MAX_HEADER_BYTES``,
    ``POLYGLOT_HEADER_TIMEOUT_SECONDS``)."""
    return guarded_protocol(settings.service.max_header_bytes, settings.service.header_timeout_seconds)


def guarded_protocol(max_head_bytes: int, head_timeout: float, http: str = "auto") -> type[asyncio.Protocol]:
    """The protocol class for ``uvicorn.Config(http=...)``: uvicorn's ``httptools`` one (``h11`` on request), with
    the head limits."""
    base: type[_HeadGuard] = GuardedH11Protocol if http == "h11" else GuardedHttpToolsProtocol
    limits = {"max_head_bytes": max_head_bytes, "head_timeout": head_timeout}
    return type(base.__name__, (base,), limits)
