"""``GET /library`` (the photos by date, a page at a time) and ``GET /library/months`` (the jump list)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.schemas.duplicates import StackInfo
from app.schemas.images import ImageMetadata, LocalDateTime


class LibraryPhoto(BaseModel):
    id: int = Field(ge=0)
    date: LocalDateTime = Field(
        description="What the photo is ordered by (local time, no zone): its capture time, else its file's time; "
        "null for photos indexed before file times were recorded (ordered by when they were indexed)."
    )
    date_source: Literal["taken", "file", "indexed"] = Field(
        description="'taken': EXIF capture time; 'file': no capture time, the file's modification time instead; "
        "'indexed': neither (ordered by indexing order, newest first)."
    )
    thumbnail_url: str = Field(max_length=200)
    image_url: str = Field(max_length=200)
    preview_url: str = Field(max_length=200)
    metadata: ImageMetadata
    stack: StackInfo | None = Field(default=None, description="stack=true: the near-duplicates it stands for.")


class LibraryPage(BaseModel):
    results: list[LibraryPhoto] = Field(max_length=1000)
    next_cursor: str | None = Field(
        default=None, max_length=200, description="`cursor` of the next page (opaque); null at the end."
    )
    filters: dict[str, str] | None = Field(default=None, description="The photo filters applied, as understood.")
    matching_images: int | None = Field(default=None, ge=0, description="With filters: how many photos pass them.")
    stacked: bool = Field(description="Whether near-duplicates are stacked (stack=true).")
    total_images: int = Field(ge=0, description="Photos in the index.")


class MonthCountOut(BaseModel):
    year: int = Field(ge=1, le=9999)
    month: int = Field(ge=1, le=12)
    count: int = Field(ge=1, description="Photos taken that month (stacks counted once with stack=true).")
    month_param: str = Field(max_length=7, description="The `month` parameter of /library that starts there.")


class LibraryMonths(BaseModel):
    months: list[MonthCountOut] = Field(max_length=120_000, description="Months with photos, newest first.")
    undated: int = Field(ge=0, description="Photos without a capture time (listed after the dated ones).")
    filters: dict[str, str] | None = None
    stacked: bool
