"""Refuse request bodies over the upload limit while they arrive (413), before they are buffered.

A ``Content-Length`` over the limit is refused at once; a chunked body is counted as it streams and cut off
as soon as it passes the limit. Multipart framing gets a small allowance over the file-size limit.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
