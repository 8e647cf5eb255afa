"""Image → caption retrieval results."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CaptionResult(BaseModel):
    id: int = Field(ge=0)
    text: str = Field(max_length=10_000)
    score: float = Field(ge=-1.001, le=1.001, description="Cosine similarity in [-1, 1].")
    rank: int = Field(ge=1)
    image: str | None = Field(default=None, max_length=4096, description="Image the caption was written for.")
    source: str | None = Field(default=None, max_length=200)


class CaptionsResponse(BaseModel):
    image_id: int | None = Field(default=None, ge=0, description="The indexed image, when asked by id.")
    captions: dict[str, list[CaptionResult]] = Field(description="Best captions per requested language.")
    available_languages: list[str] = Field(max_length=500, description="Languages of the caption collection.")


class CaptionSearchResponse(BaseModel):
    query: str = Field(max_length=10_000, description="The query as embedded (control characters removed).")
    lang: str = Field(max_length=16, description="The query's language (given, or detected when absent).")
    target: str = Field(max_length=16, description="The language of the captions ranked.")
    space: str = Field(
        max_length=200,
        description="Where query and captions were compared: pcca:x-y (an alignment trained for the pair), "
        "sentence:ENCODER (frozen sentence embeddings) or tower (the image space).",
    )
    captions: list[CaptionResult] = Field(max_length=1000, description="Best captions first.")
