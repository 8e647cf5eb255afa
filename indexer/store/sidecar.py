"""``index.json``: what an index folder holds and how it was built, written atomically.

Readers use it to refuse an index built with another image encoder or image space, and humans read it to
know what is there without opening FAISS.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

from indexer.atomic import atomic_write_json

SIDECAR_NAME = "index.json"
DB_NAME = "metadata.sqlite"  # the metadata database of an index folder, unless POLYGLOT_DATABASE_URL says otherwise
FORMAT_VERSION = 1


class SidecarError(ValueError):
    """The sidecar is unreadable or from a newer format."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def build_info() -> dict[str, str]:
    """Library versions that shaped the files (FAISS format, numpy, torch)."""
    info = {"python": platform.python_version()}
    for package in ("faiss-cpu", "numpy", "torch", "sqlalchemy", "polyglot-image-search"):
        try:
            info[package] = importlib_metadata.version(package)
        except importlib_metadata.PackageNotFoundError:
            continue
    return info


@dataclass
class Sidecar:
    image_encoder: str
    dim: int | None
    index_type: str
    image_space: dict[str, Any]
    count: int = 0
    format_version: int = FORMAT_VERSION
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    build: dict[str, str] = field(default_factory=build_info)
    files: dict[str, str] = field(default_factory=dict)
    # Incremented by every save, under the folder's write lock: a process whose vectors are at another revision
    # takes in what another process saved before it writes (indexer/store/revisions.py). 0: never saved with it.
    revision: int = 0

    @property
    def image_space_fingerprint(self) -> str:
        return str(self.image_space.get("fingerprint", ""))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, folder: Path) -> None:
        self.updated_at = _now()
        self.build = build_info()
        atomic_write_json(Path(folder) / SIDECAR_NAME, self.to_json())

    @classmethod
    def load(cls, folder: Path) -> Sidecar | None:
        """The sidecar of ``folder``, or None if the folder holds no index yet."""
        path = Path(folder) / SIDECAR_NAME
        if not path.exists():
            return None
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SidecarError(f"cannot read {path}: {exc}") from exc
        version = payload.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise SidecarError(
                f"{path} has format_version {version!r}; this version reads up to {FORMAT_VERSION} (upgrade polyglot)"
            )
        known = {name for name in cls.__dataclass_fields__}
        try:
            return cls(**{key: value for key, value in payload.items() if key in known})
        except TypeError as exc:
            raise SidecarError(f"{path} is missing fields: {exc}") from exc
