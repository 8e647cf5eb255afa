"""Security headers on every answer: no MIME sniffing, no framing, no referrer; a strict CSP on the web page.

The page (``/`` and ``/static``) loads only its own script, style and the images of this origin; image answers set
their own, stricter policy (``default-src 'none'``, app/served_files.py) and keep it. ``/docs`` (Swagger UI loads
from a CDN) is left without a CSP.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

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
