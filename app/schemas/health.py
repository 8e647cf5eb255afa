"""Liveness / readiness answers."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Health(BaseModel):
    status: str = Field(max_length=20)
    text_encoder: str | None = Field(
        default=None, max_length=100, description="The text encoder serving every language (null while loading)."
    )


class Ready(BaseModel):
    status: str = Field(max_length=20)
    images: int = Field(ge=0)
    captions: int = Field(ge=0)
    text_encoder: str = Field(
        max_length=100, description="The text encoder behind every query, caption and tag (the student: e5-student)."
    )
    text_model: str = Field(
        max_length=300,
        description="Encoder and folder of the text side (e.g. e5-student:student; POLYGLOT_TOWER_PATH).",
    )
    text_languages: list[str] | None = Field(
        default=None, max_length=500, description="Languages queries may name (null: not declared)."
    )
    image_encoder: str = Field(max_length=100)
    image_precision: str = Field(
        max_length=10,
        description="The image CNN's graph: int8 (the CPU default, POLYGLOT_IMAGE_PRECISION) or fp32 (GPU, torch, "
        "or asked for).",
    )
    index_kind: str = Field(
        max_length=40,
        description="FAISS index kind of the image index (flat, pq-refine, hnsw, ivf-sq8, ivf-pq-mmap): chosen from the "
        "collection size unless POLYGLOT_INDEX_KIND forces one.",
    )
    load_seconds: dict[str, float]
    read_only: str | None = Field(
        default=None,
        max_length=2000,
        description="Set when the index's last save failed (no space): it serves its last good state, read-only, "
        "and the next write retries the save.",
    )


class NotReady(BaseModel):
    status: str = Field(max_length=20, description="'loading' (models and index not loaded yet) or 'unavailable'.")
    backend: str | None = Field(default=None, max_length=20, description="The unreachable backend: database, vectors.")
    detail: str | None = Field(default=None, max_length=1000)
