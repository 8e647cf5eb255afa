"""Prometheus metrics (one registry per app, so several apps in one process never collide) and the
request middleware that records them and, when enabled, logs one structured line per request."""

from __future__ import annotations

import logging
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("app.requests")

_BUCKETS = (0.002, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "polyglot_requests", "HTTP requests by endpoint.", ["method", "endpoint", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "polyglot_request_seconds",
            "Request latency by endpoint.",
            ["method", "endpoint"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.images = Gauge("polyglot_index_images", "Images in the index.", registry=self.registry)
        self.captions = Gauge("polyglot_index_captions", "Captions in the caption index.", registry=self.registry)
        self.load_seconds = Gauge(
            "polyglot_model_load_seconds",
            "Time to load each component at start-up.",
            ["component"],
            registry=self.registry,
        )
        # Mean micro-batch size = queries / batches: how much concurrent searches share encoder and FAISS calls.
        self.search_batches = Gauge(
            "polyglot_search_batches", "Micro-batches of text searches run so far.", registry=self.registry
        )
        self.search_batched_queries = Gauge(
            "polyglot_search_batched_queries", "Text searches run in micro-batches so far.", registry=self.registry
        )


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
