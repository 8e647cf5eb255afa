"""Close requests whose body stalls: ``POLYGLOT_BODY_TIMEOUT_SECONDS`` without a byte → 408 and the connection closes.

uvicorn bounds idle keep-alive connections, not a request whose body never arrives: a client that announced a
``Content-Length`` and sent less held a connection (and a worker's form parsing) forever. This middleware
bounds the wait for each piece of the body; on timeout it answers 408 (when nothing was answered yet) and tells
the application the client left, and the server closes the connection, since the body was never read whole.
"""

from __future__ import annotations

import json

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTimeoutMiddleware:
    def __init__(self, app: ASGIApp, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = timed_out = False

        async def timed_receive() -> Message:
            nonlocal timed_out
            if timed_out:
                return {"type": "http.disconnect"}
            with anyio.move_on_after(self.seconds) as scope_:
                message = await receive()
            if scope_.cancelled_caught:
                timed_out = True
                if not started:
                    await _answer_408(send, self.seconds)
                return {"type": "http.disconnect"}
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


async def _answer_408(send: Send, seconds: float) -> None:
    body = {"detail": f"the request body stalled: nothing received for {seconds:g} s (POLYGLOT_BODY_TIMEOUT_SECONDS)"}
    payload = json.dumps(body).encode()
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
