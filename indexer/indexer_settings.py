"""Typed settings shared by the indexer, training and the service (env prefix ``POLYGLOT_``).

Settings are never read at import time: call :func:`get_settings` (or build ``IndexerSettings()``) where needed.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from indexer.store.index_kinds import VectorIndexSettings


def default_home() -> Path:
    """Where models, indices and caches live unless configured: ``./var`` of the working directory."""
    return Path("var")


class IndexerSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="POLYGLOT_", env_file=".env", extra="ignore")

    home: Path = Field(default_factory=default_home, description="Root folder for models, index and caches.")
    index_dir: Path | None = Field(default=None, description="Index folder; default HOME/index.")
    models_dir: Path | None = Field(default=None, description="Downloaded/verified model files; default HOME/models.")
    cache_dir: Path | None = Field(default=None, description="Feature caches; default HOME/cache.")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL for image metadata; default a SQLite file in the index folder.",
    )
    image_encoder: str = Field(default="efficientnet-lite2", description="Image encoder name (see encoders).")
    text_encoder: str = Field(default="muse", description="Text encoder name (see encoders).")
    tower_path: Path | None = Field(default=None, description="Text tower folder; default the shipped tower.")
    batch_size: int = Field(default=32, ge=1, le=1024, description="Images per encoder batch while indexing.")
    max_image_pixels: int = Field(
        default=64_000_000, ge=1, description="Decompression-bomb limit: images with more pixels are refused."
    )
    torch_threads: int | None = Field(default=None, ge=1, le=256, description="torch intra-op threads.")
    device: str = Field(default="cpu", description="torch device for the encoders: cpu or cuda.")
    # Its own env prefix (POLYGLOT_INDEX_KIND, ...), read here with the rest of the settings: the library is
    # handed the values and never reads the environment itself.
    vector_index: VectorIndexSettings = Field(
        default_factory=VectorIndexSettings, description="FAISS index kind rule and tuning (POLYGLOT_INDEX_*)."
    )

    @property
    def resolved_index_dir(self) -> Path:
        return self.index_dir or self.home / "index"

    @property
    def resolved_models_dir(self) -> Path:
        return self.models_dir or self.home / "models"

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir or self.home / "cache"


def get_settings() -> IndexerSettings:
    return IndexerSettings()
