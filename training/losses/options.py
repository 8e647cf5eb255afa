"""What a tower loss lets the user set: each loss module declares its keywords as :class:`LossOption` values
(``OPTIONS``), and the command line (``polyglot train tower``) builds one ``--NAME`` option per keyword and
refuses an option given with a loss that does not declare it. No torch here: a declaration is plain data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LossOption:
    name: str  # the loss's keyword argument; --NAME on the command line (underscores as dashes)
    default: float | bool  # the loss's own default (a test checks it against the loss's signature)
    help: str
    flags: str | None = None  # a bool's switch pair, e.g. "--bounded/--unbounded"; None: --NAME

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


def unknown_options(loss: str, declared: Iterable[LossOption], given: Mapping[str, Any]) -> list[str]:
    """The options in ``given`` (those not None) that ``loss`` does not declare, as the user spelt them."""
    names = {option.name for option in declared}
    return [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None and name not in names]
