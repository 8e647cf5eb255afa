"""The service's settings: the library's settings tree (:class:`indexer.settings.Settings`) plus a ``service``
section for what only the HTTP service needs (``POLYGLOT_`` prefix, flat names as before: POLYGLOT_API_KEY,
POLYGLOT_MAX_K, …).

One :class:`ServiceSettings` per service process: built in ``create_app`` (or handed to it) or by the CLI's one
settings helper, never at import time, never inside a router.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from indexer.settings import Settings
from indexer.thumbnails import thumbnails_dir


class ServiceSection(BaseSettings):
    """What only the HTTP service reads: admin key, limits per request, threads, logging, outages."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_", env_file=".env", extra="ignore")

    api_key: SecretStr | None = Field(
        default=None,
        description="Key for the admin endpoints (header X-API-Key or Authorization: Bearer). Unset: admin disabled.",
    )
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed by CORS (JSON list).")
    max_upload_bytes: int = Field(default=20_000_000, ge=1_000, le=1_000_000_000, description="Largest upload.")
    max_query_chars: int = Field(default=500, ge=1, le=10_000, description="Longest text query.")
    max_k: int = Field(default=100, ge=1, le=1_000, description="Most results per page.")
    max_offset: int = Field(default=10_000, ge=0, le=1_000_000, description="Deepest pagination offset.")
    thread_pool_size: int = Field(default=4, ge=1, le=256, description="Threads for blocking inference/IO.")
    inference_threads: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Intra-op threads of torch, FAISS and the text encoder per request. Requests already run in "
        "parallel in the thread pool; one thread each avoids oversubscribing the cores with tiny single queries.",
    )
    record_cache_seconds: float = Field(
        default=30.0, ge=0, le=86_400, description="How long image metadata read for result pages is reused."
    )
    search_batch_size: int = Field(
        default=32, ge=1, le=1024, description="Most concurrent text searches run as one batch (1 = no batching)."
    )
    search_batch_workers: int = Field(
        default=2,
        ge=1,
        le=64,
        description="Search threads of the text-search micro-batcher, each running one batch at a time. With the "
        "student's int8 graph (one intra-op thread) 2 keep both cores encoding: on 2 cores, 8 clients, 166-226 "
        "req/s per language against 128-204 with 1 (benchmarks/load_search-student.md); 1 gave the largest "
        "batches when the text encoder was mUSE (605 req/s against 512).",
    )
    images_dir: Path | None = Field(default=None, description="Folder indexed by `polyglot serve` before serving.")
    captions_file: Path | None = Field(default=None, description="JSONL captions indexed by `serve` if new.")
    max_captions: int = Field(default=20, ge=1, le=200, description="Most captions per language in /captions.")
    log_requests: bool = Field(default=False, description="One structured log line per request (at debug level).")
    outage_retry_after_seconds: int = Field(
        default=5,
        ge=1,
        le=3600,
        description="Retry-After of a 503/507 answered while a backend is down or the disk full.",
    )
    error_log_interval_seconds: float = Field(
        default=10.0,
        ge=0,
        le=3600,
        description="Repeated errors of one kind are logged once per interval, with a count.",
    )
    body_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="A request body that sends nothing for this long is answered 408 and its connection closed "
        "(a client that announces more bytes than it sends no longer holds a connection forever).",
    )
    body_total_seconds: float = Field(
        default=120.0,
        gt=0,
        le=86400,
        description="A request body not received whole within this long is answered 408 and its connection "
        "closed, however steadily it trickles (one byte every 20 s never tripped the gap time-out). 120 s carries "
        "the largest upload (POLYGLOT_MAX_UPLOAD_BYTES, 20 MB) at 1.4 Mbit/s.",
    )
    max_header_bytes: int = Field(
        default=16 * 1024,
        ge=1024,
        le=1 << 20,
        description="Longest request head (request line and headers): a longer one is answered 431 and its "
        "connection closed as soon as that many bytes are in (`polyglot serve`'s HTTP server).",
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="A request head not received whole this long after its first byte is answered 408 and its "
        "connection closed (a head that trickles in no longer holds a connection).",
    )
    admin_key_tries: int = Field(
        default=5,
        ge=1,
        le=10_000,
        description="Wrong admin keys a client address may send in a row before it is answered 429 (with "
        "Retry-After), whatever key it sends, until it has waited POLYGLOT_ADMIN_KEY_RETRY_SECONDS per try.",
    )
    admin_key_retry_seconds: float = Field(
        default=10.0,
        gt=0,
        le=86_400,
        description="Seconds after which a client address that sent wrong admin keys gets one more try.",
    )
    decode_pixels_in_flight: int | None = Field(
        default=None,
        ge=1,
        description="Most image pixels decoded at once by the whole process (uploads and thumbnails); more wait. "
        "Unset: POLYGLOT_MAX_IMAGE_PIXELS, i.e. one largest image at a time (peak: about 8 bytes a pixel above idle).",
    )
    allow_local_paths: bool = Field(
        default=True, description="Admin POST /images may index a path on the server's disk."
    )
    search_cutoff: Literal["auto", "off"] = Field(
        default="auto",
        description="The relevance cut-off of a text search that does not give `cutoff`: 'auto', the photos that "
        "stand out (benchmarks/relevance_default.md), or 'off', every result.",
    )


class ServiceSettings(Settings):
    """The service process's one settings root: the library's sections and ``service``."""

    FLAT_SECTIONS: ClassVar[tuple[str, ...]] = (*Settings.FLAT_SECTIONS, "service")

    service: ServiceSection = Field(default_factory=ServiceSection, description="The HTTP service.")
    # The service answers within seconds: a database that stops answering is a 503 after this (pg_deadline), where
    # the CLI's maintenance (a migration, a rebuild over millions of rows) may legitimately run longer statements.
    database_timeout_seconds: float | None = Field(
        default=5.0,
        ge=1,
        le=3600,
        description="The longest wait for the database server to answer one call, then 503 (and for as long again "
        "calls fail at once).",
    )

    @property
    def upload_limit(self) -> int:
        """Largest upload accepted: POLYGLOT_MAX_UPLOAD_BYTES, never more than POLYGLOT_MAX_FILE_BYTES."""
        return min(self.service.max_upload_bytes, self.index.max_file_bytes)

    @property
    def pixel_budget(self) -> int:
        return self.service.decode_pixels_in_flight or self.index.max_image_pixels

    def served_roots(self, index_dir: Path) -> list[Path]:
        """Folders whose files may be indexed by server path and served: POLYGLOT_ALLOWED_ROOTS, else the served
        photo folder and the watched folders (``serve --watch``); always the index's own uploads. Resolved (symlinks
        in the roots themselves are followed once, here)."""
        roots = list(self.index.allowed_roots) if self.index.allowed_roots is not None else []
        if self.index.allowed_roots is None:
            images_dir = self.service.images_dir
            roots += [images_dir] if images_dir is not None else []
            roots += [folder for folder in self.index.watch_dirs if folder not in roots]
        roots.append(index_dir / "uploads")
        return [root.expanduser().resolve() for root in roots]

    @property
    def thumbnails_dir(self) -> Path:
        return thumbnails_dir(self.resolved_cache_dir)
