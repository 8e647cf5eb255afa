"""Search requests and results. Scores are cosine similarities of unit vectors: see SCORE_DOC."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.schemas.duplicates import StackInfo
from app.schemas.images import ImageMetadata

SCORE_DOC = (
    "**Scores** are cosine similarities between unit vectors in the shared image space, so they lie in "
    "[-1, 1]: 1 = same direction, 0 = unrelated, negative = dissimilar. Text→image scores are typically far "
    "lower than image→image scores (a caption never matches a photo as closely as a near-duplicate photo "
    "does), so compare scores within one result list, and pick a `min_score` per kind of query."
)


class LanguageInfo(BaseModel):
    requested: str | None = Field(default=None, max_length=16, description="The `lang` parameter, if given.")
    detected: str | None = Field(
        default=None,
        max_length=16,
        description="Language detected from the query (no `lang` given), only when the detector is confident — "
        "probability ≥ 0.9 for a single word, ≥ 0.6 for more — and only among the text encoder's languages; "
        "null otherwise (most single words: 'dog', 'Hund', 'chat' could be many languages). A client may then "
        "show the user's own language instead.",
    )
    probability: float | None = Field(
        default=None, ge=0, le=1, description="The detector's probability of its best guess (shown or not)."
    )
    used: str | None = Field(
        default=None,
        max_length=16,
        description="The language the query was treated as: `requested`, else `detected`; null: none (the text "
        "encoder embeds the query all the same).",
    )
    supported: bool | None = Field(
        default=None,
        description="Whether the text encoder was trained on `used` (true for every language it labels); null when "
        "no language was given or confidently detected. Never false for a query the encoder serves.",
    )


class SearchResult(BaseModel):
    id: int = Field(ge=0)
    score: float = Field(ge=-1.001, le=1.001, description="Cosine similarity in [-1, 1].")
    rank: int = Field(ge=1, description="1-based position in the whole result list (offset included).")
    thumbnail_url: str = Field(max_length=200)
    image_url: str = Field(max_length=200)
    preview_url: str = Field(
        max_length=200, description="A JPEG of at most POLYGLOT_PREVIEW_SIZE px, for any format (HEIC, AVIF, RAW)."
    )
    metadata: ImageMetadata
    stack: StackInfo | None = Field(
        default=None, description="stack=true: the near-duplicates this result stands for (null: none)."
    )


class SearchResponse(BaseModel):
    query: str | None = Field(default=None, max_length=10_000)
    query_image_id: int | None = Field(default=None, ge=0)
    language: LanguageInfo | None = None
    text_encoder: str | None = Field(
        default=None,
        max_length=200,
        description="The text encoder that embedded the query (the shipped student: e5-student).",
    )
    clc: str | None = Field(
        default=None,
        max_length=20,
        description="The cross-lingual consistency that ranked the results ('average', 'classifier'); null: off. "
        "With 'classifier' the order is the classifier's and `score` the 'average' score.",
    )
    k: int = Field(ge=1, le=1000)
    offset: int = Field(ge=0)
    min_score: float | None = Field(default=None, ge=-1, le=1)
    sort: str = Field(default="score", max_length=10, description="'score' (best first) or 'date' (newest first).")
    cutoff: float | None = Field(
        default=None,
        ge=0,
        le=10,
        description="The z-score results had to reach (cutoff=auto, and sort=date unless cutoff=off); null: none.",
    )
    stacked: bool = Field(default=False, description="Whether near-duplicates were stacked (stack=true).")
    filters: dict[str, str] | None = Field(
        default=None, description="The photo filters applied (taken_after, taken_before, folder, near), as understood."
    )
    matching_images: int | None = Field(
        default=None, ge=0, description="With filters: how many images pass them (what the search ranked)."
    )
    results: list[SearchResult] = Field(max_length=1000)
    next_offset: int | None = Field(default=None, ge=0, description="Offset of the next page; null at the end.")
    total_images: int = Field(ge=0, description="Images in the index.")


class LanguagesResponse(BaseModel):
    text_languages: list[str] | None = Field(
        default=None, max_length=500, description="ISO 639-1 codes queries can use; null = not declared."
    )
    caption_languages: list[str] = Field(max_length=500, description="Languages of the caption collection.")
    tag_languages: list[str] = Field(
        default_factory=list, max_length=500, description="Languages `/tag` answers in (shipped or built vocabularies)."
    )
    names: dict[str, str] = Field(default_factory=dict, description="English names of the codes.")
