"""How every ``polyglot`` command reads its settings: once, when the command starts, through this one helper;
from there the command hands the object (or its sections) down. Nothing below a command builds settings."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from app.service_settings import ServiceSettings
from indexer.settings import Settings

S = TypeVar("S", bound=Settings)


@overload
def read_settings(**overrides: Any) -> Settings: ...


@overload
def read_settings(kind: type[S], /, **overrides: Any) -> S: ...


def read_settings(kind: type[Settings] = Settings, /, **overrides: Any) -> Settings:
    """The settings tree from the environment (and ``./.env``); ``kind``: :class:`ServiceSettings` for the
    commands that run the service or its parts; ``overrides``: values a command's options set (flat names of
    a section's fields are fine: ``read_settings(tower_path=folder)``)."""
    return kind(**overrides)


__all__ = ["ServiceSettings", "Settings", "read_settings"]
