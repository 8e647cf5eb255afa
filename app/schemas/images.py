"""Image metadata as the API shows it (never the server-side path: the file name, and the folder from its library
root)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import PurePath
from typing import Annotated, Any

from pydantic import BaseModel, Field, WithJsonSchema

from indexer.metadata_limits import MAX_CAPTION_CHARS, MAX_TAGS, MAX_TITLE_CHARS
from indexer.places import Place, place_line
from indexer.store.metadata import ImageRecord

# A wall-clock time without a zone (what EXIF records, a file's local time): JSON Schema's "date-time" format
# demands an offset, which these times do not have, so the schema says what they are.
LOCAL_TIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?$"
LocalDateTime = Annotated[
    datetime | None,
    WithJsonSchema({"anyOf": [{"type": "string", "pattern": LOCAL_TIME_PATTERN}, {"type": "null"}]}),
]


class ImageMetadata(BaseModel):
    filename: str = Field(max_length=4096, description="File name of the image (no folder).")
    width: int = Field(ge=0, description="Pixels.")
    height: int = Field(ge=0, description="Pixels.")
    bytes: int = Field(ge=0, description="File size.")
    sha256: str = Field(min_length=64, max_length=64)
    added_at: datetime
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    caption: str | None = Field(default=None, max_length=MAX_CAPTION_CHARS)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)
    extra: dict[str, Any] = Field(default_factory=dict, description="Other metadata from the manifest/upload.")
    # Photo facts read from the file (issue 27; indexer.photo_metadata.PhotoFacts, with the API's bounds and words:
    # tests/collection/test_metadata.py checks that they agree); null where the file does not say.
    folder: str | None = Field(
        default=None,
        max_length=4096,
        description="Folder of the file, from the library root that holds it, starting with the root's name "
        "(Photos/2024/Lisbon; uploads: uploads): never the server's absolute path (app/library_folders.py).",
    )
    taken_at: LocalDateTime = Field(
        default=None, description="Capture time, local to where it was taken (EXIF DateTimeOriginal), no zone."
    )
    taken_offset_minutes: int | None = Field(
        default=None, ge=-24 * 60, le=24 * 60, description="UTC offset of `taken_at` where EXIF records it."
    )
    latitude: float | None = Field(default=None, ge=-90, le=90, description="GPS latitude, degrees.")
    longitude: float | None = Field(default=None, ge=-180, le=180, description="GPS longitude, degrees.")
    camera_make: str | None = Field(default=None, max_length=255)
    camera_model: str | None = Field(default=None, max_length=255)
    orientation: int | None = Field(default=None, ge=1, le=8, description="EXIF orientation (1 = upright).")
    city: str | None = Field(
        default=None,
        max_length=200,
        description="City or town of the GPS position (GeoNames, offline, at index time; the place that best names "
        "it within 25 km, e.g. Lisbon rather than its quarter).",
    )
    region: str | None = Field(default=None, max_length=200, description="First-level region of that place.")
    country: str | None = Field(
        default=None,
        max_length=200,
        description="Country of that place (GeoNames' English name, as `place` filters match it; `place` shows it "
        "in the reader's language).",
    )
    place: str | None = Field(
        default=None,
        max_length=700,
        description='The place line to show: city, region and country without repeating a part ("Lisbon, '
        'Portugal", not "Lisbon, Lisbon, Portugal"), the country in the reader\'s language (CLDR; `lang` of '
        "/images/{id}/info, else the Accept-Language header's first language, else English); null without a place.",
    )
    file_modified_at: LocalDateTime = Field(
        default=None,
        description="The file's modification time when indexed (server-local, no zone): the library orders photos "
        "without `taken_at` by it (null for photos indexed before it was recorded: `added_at` stands in).",
    )

    @classmethod
    def from_record(
        cls, record: ImageRecord, folder_of: Callable[[str | None], str | None] | None = None
    ) -> ImageMetadata:
        """The API view of ``record``; ``folder_of`` shows its folder (:class:`app.library_folders.LibraryFolders`;
        None: the folder's name alone)."""
        name = record.extra.get("filename") if isinstance(record.extra.get("filename"), str) else None
        columns = record.columns()
        folder = columns.get("folder")
        columns["folder"] = folder_of(folder) if folder_of is not None else (PurePath(folder).name if folder else None)
        place = Place(columns.get("city"), columns.get("region"), columns.get("country"))
        return cls(
            place=place_line(place),
            filename=name or PurePath(record.path).name,
            width=record.width,
            height=record.height,
            bytes=record.bytes,
            sha256=record.sha256,
            added_at=record.added_at,
            title=record.title,
            caption=record.caption,
            tags=record.tags,
            extra=record.extra,
            **columns,
        )

    def in_language(self, language: str) -> ImageMetadata:
        """This view with its place line in ``language`` (the country as CLDR names it there)."""
        if self.place is None or language.split("-")[0].lower() == "en":
            return self
        return self.model_copy(update={"place": place_line(Place(self.city, self.region, self.country), language)})


class ImageInfo(BaseModel):
    id: int = Field(ge=0)
    image_url: str = Field(max_length=200)
    thumbnail_url: str = Field(max_length=200)
    metadata: ImageMetadata


class ImageAdded(ImageInfo):
    created: bool = Field(description="False when the same image (same bytes or path) was already indexed.")


class ImageDeleted(BaseModel):
    id: int = Field(ge=0)
    deleted: bool = True
    remaining: int = Field(ge=0, description="Images left in the index.")
