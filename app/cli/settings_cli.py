"""How every ``polyglot`` command reads its settings: once, when the command starts, through this one helper;
from there the command hands the object (or its sections) down. Nothing below a command builds settings."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from pydantic import ValidationError

from app.cli.common import fail
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
    a section's fields are fine: ``read_settings(tower_path=folder)``). A value the settings refuse ends the
    command with one line naming the variable, not a traceback."""
    try:
        return kind(**overrides)
    except ValidationError as exc:
        raise fail(invalid_settings_message(exc)) from None


def invalid_settings_message(exc: ValidationError) -> str:
    """``POLYGLOT_IMAGE_PRECISION='int4': Input should be 'int8' or 'fp32'`` for each refused value (every section
    reads its fields under the ``POLYGLOT_`` prefix, so the field is the variable)."""
    refused = [
        f"POLYGLOT_{str(error['loc'][0]).upper()}={error.get('input')!r}: {error['msg']}"
        for error in exc.errors()
        if error["loc"]
    ]
    return "invalid setting " + "; ".join(refused or [str(exc)])


__all__ = ["ServiceSettings", "Settings", "read_settings"]
