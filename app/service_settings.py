"""Service settings: the indexer's settings plus what only the HTTP service needs (``POLYGLOT_`` prefix).

Built in the lifespan (or handed to :func:`app.main.create_app`), never at import time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr

from indexer.glosses import GLOSS_WEIGHT
from indexer.indexer_settings import IndexerSettings


class ServiceSettings(IndexerSettings):
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
        default=1,
        ge=1,
        le=64,
        description="Search threads, each running one batch at a time (1: the largest batches; on 2 cores 1 gave "
        "605 req/s at 8 clients, 2 gave 512).",
    )
    fast_tower: str = Field(
        default="auto",
        min_length=1,
        max_length=1000,
        description="A second, cheaper text tower for /search queries in the languages its encoder declares (the "
        "others keep the main tower). 'auto': the shipped mUSE tower when the main tower is the shipped default; "
        "'off'; or a tower folder sharing the main tower's image space.",
    )
    fast_tower_use: Literal["route", "ensemble"] = Field(
        default="route",
        description="For queries in the fast tower's languages: 'route' embeds them with the fast tower alone "
        "(lowest latency); 'ensemble' averages both towers' scores (best recall, the main tower's latency).",
    )
    fast_tower_weight: float = Field(
        default=0.5, ge=0.0, le=1.0, description="The fast tower's share of the ensemble score."
    )
    lexicons_dir: Path | None = Field(
        default=None,
        description="Folder of bilingual dictionaries in the MUSE layout (en-XX.tsv): /search queries in those "
        "languages are also scored by their word-by-word English gloss (cross-lingual consistency; docs/results.md "
        "measures it; it doubles the text work of those queries). Unset: off.",
    )
    lexicon_weight: float = Field(
        default=GLOSS_WEIGHT, ge=0.0, le=1.0, description="The English gloss's share of a query's score (0: ignore it)."
    )
    images_dir: Path | None = Field(default=None, description="Folder indexed by `polyglot serve` before serving.")
    captions_dir: Path | None = Field(default=None, description="Caption index folder; default INDEX_DIR/captions.")
    captions_file: Path | None = Field(default=None, description="JSONL captions indexed by `serve` if new.")
    max_captions: int = Field(default=20, ge=1, le=200, description="Most captions per language in /captions.")
    query_cache_size: int = Field(default=1024, ge=0, le=1_000_000, description="Query vectors kept (LRU); 0 = off.")
    thumbnail_size: int = Field(default=256, ge=32, le=1024, description="Longest side of thumbnails (pixels).")
    log_requests: bool = Field(default=False, description="One structured log line per request (at debug level).")
    allow_local_paths: bool = Field(
        default=True, description="Admin POST /images may index a path on the server's disk."
    )

    @property
    def resolved_fast_tower(self) -> Path | None:
        if self.fast_tower == "off":
            return None
        if self.fast_tower == "auto":
            from indexer.embedders import shipped_fast_tower_path, shipped_tower_path

            main = (self.tower_path or shipped_tower_path()).resolve()
            return shipped_fast_tower_path() if main == shipped_tower_path().resolve() else None
        return Path(self.fast_tower)

    @property
    def resolved_captions_dir(self) -> Path:
        return self.captions_dir or self.resolved_index_dir / "captions"

    @property
    def thumbnails_dir(self) -> Path:
        return self.resolved_cache_dir / "thumbnails"
