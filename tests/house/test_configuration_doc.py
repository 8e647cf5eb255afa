"""docs/configuration.md names every setting: each field of every settings section, under the environment
variable a user sets (its section's prefix and the field's name), including the folders and the cache."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings

from app.service_settings import ServiceSection, ServiceSettings
from indexer.settings import IndexSettings, ModelSettings, QuerySettings, Settings, TaggingSettings
from indexer.store.index_kinds import VectorIndexSettings

ROOT = Path(__file__).resolve().parents[2]
SECTIONS: tuple[type[BaseSettings], ...] = (
    Settings,
    ServiceSettings,
    ModelSettings,
    IndexSettings,
    QuerySettings,
    TaggingSettings,
    VectorIndexSettings,
    ServiceSection,
)


def environment_names(section: type[BaseSettings]) -> list[str]:
    """The variables a section reads: its prefix and each plain field's name (nested sections are their own)."""
    prefix = section.model_config.get("env_prefix") or ""
    names = []
    for name, field in section.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseSettings):
            continue
        names.append(f"{prefix}{name}".upper())
    return names


def test_every_setting_is_documented() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    names = [name for section in SECTIONS for name in environment_names(section)]
    assert len(names) > 80  # every section was read
    missing = sorted({name for name in names if f"`{name}`" not in page})
    assert not missing, f"docs/configuration.md does not name: {missing}"


def test_the_cache_folder_is_explained() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert "`POLYGLOT_CACHE_DIR`" in page and "the cache folder" in page
