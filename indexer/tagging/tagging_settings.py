"""Tagging settings (env prefix ``POLYGLOT_TAG_``, e.g. ``POLYGLOT_TAG_W1=0.65``); never read at import time."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from indexer.tagging.ranking import DEFAULT_W1, DEFAULT_W2


class TaggingSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="POLYGLOT_TAG_", env_file=".env", extra="ignore")

    w1: float = Field(default=DEFAULT_W1, ge=0.0, le=10.0, description="Weight of cos(image, target tag), eq. 5.")
    w2: float = Field(default=DEFAULT_W2, ge=0.0, le=10.0, description="Weight of cos(source tag, target tag).")
    source: Literal["auto", "imagenet", "captions"] = Field(
        default="auto",
        description="English source tags: ImageNet classes, retrieved captions' words, or auto (captions if a "
        "caption index is loaded, else ImageNet).",
    )
    captions_k: int = Field(default=10, ge=1, le=200, description="Captions retrieved per image for source tags.")
    default_k: int = Field(default=10, ge=1, le=100, description="Tags per language when the request gives no k.")
    max_k: int = Field(default=50, ge=1, le=500, description="Most tags per language a request may ask for.")
