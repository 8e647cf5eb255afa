"""``GET /duplicates``: groups of exact and near-duplicate photos."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.schemas.images import LocalDateTime


class DuplicateImage(BaseModel):
    id: int = Field(ge=0)
    filename: str = Field(max_length=4096)
    score: float | None = Field(
        default=None, ge=-1, le=1, description="near: the photo's best cosine within the group; exact: null."
    )
    width: int = Field(ge=0)
    height: int = Field(ge=0)
    bytes: int = Field(ge=0)
    taken_at: LocalDateTime = None
    image_url: str = Field(max_length=200)
    thumbnail_url: str = Field(max_length=200)
    kept: bool = Field(default=False, description="Marked as the copy to keep (PUT /duplicates/keep/{id}).")


class DuplicateGroupOut(BaseModel):
    kind: Literal["exact", "near"] = Field(description="exact: same bytes; near: cosine >= threshold.")
    images: list[DuplicateImage] = Field(max_length=100_000)


class DuplicatesResponse(BaseModel):
    threshold: float = Field(ge=0, le=1)
    groups: list[DuplicateGroupOut] = Field(max_length=100_000)
    total_groups: int = Field(ge=0, description="Groups found (the answer lists at most `limit`).")


class StackInfo(BaseModel):
    """Near-duplicates of one shot shown as one result (stack=true)."""

    count: int = Field(ge=2, description="Photos in the stack, the one shown included.")
    ids: list[int] = Field(
        max_length=100_000, description="Every photo of the stack: the one shown first, then newest first."
    )
    kept: int | None = Field(default=None, ge=0, description="The copy marked to keep (PUT /duplicates/keep/{id}).")


class KeptCopyAnswer(BaseModel):
    id: int = Field(ge=0, description="The photo marked (or unmarked) as the copy to keep.")
    kept: bool = Field(description="Whether it is marked now.")
    stack: list[int] = Field(
        max_length=100_000, description="Its stack (the copy kept first); empty when it has no duplicates."
    )
