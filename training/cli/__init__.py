"""The lab's commands under ``polyglot``: :func:`register` is the ``polyglot.commands`` entry point
(pyproject.toml) that :mod:`app.cli.plugins` runs when ``polyglot`` lists its commands or is asked for one the
product does not have.

It names each command and the module that builds it; the modules load only when their command is built (this
package imports nothing heavy: ``polyglot --help`` and the product's commands stay fast). The lab's modules may
use the command line's helpers (``app.cli.common``, ``app.cli.settings_cli``): a plugin depends on its host,
never the other way round.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import typer

from app.cli.plugins import PluginCommands, registered, sub_app

# Top-level commands, in the order ``polyglot --help`` lists them after the product's.
COMMANDS = {
    "evaluate": registered("training.cli.evaluate_cmd"),
    "train": registered("training.cli.train_cmd"),
    "train-student": registered("training.cli.train_cmd"),  # hidden: the old spelling of `polyglot train student`
    "bridge": registered("training.cli.bridge_cmd"),
    "translator": registered("training.cli.translator_cmd"),
    "clc": registered("training.cli.clc_cmd"),
    "collections": sub_app("training.cli.collections_cmd", "collections_app"),
    "pseudopairs": sub_app("training.cli.collections_cmd", "pseudopairs_app"),
}


def _holder(module: str, attribute: str) -> Callable[[], typer.Typer]:
    return lambda: getattr(importlib.import_module(module), attribute)


# Commands added to the product's groups, by the group's name.
GROUP_COMMANDS = {
    "models": [_holder("training.cli.models_cmd", "app")],  # calibrate, calibrate-student, average-students
    "vocab": [_holder("training.cli.tags_cmd", "vocab_app")],  # polyglot tags vocab ship
}


def register(commands: PluginCommands) -> None:
    commands.commands.update(COMMANDS)
    for group, holders in GROUP_COMMANDS.items():
        commands.groups.setdefault(group, []).extend(holders)
