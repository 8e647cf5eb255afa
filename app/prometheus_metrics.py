"""Prometheus metrics: one registry per app, so several apps in one process never collide (the request
middleware that records them is in app/middleware.py)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
