"""Commands that other packages add to ``polyglot``: the lab (``training``) adds its own (evaluate, train, tower
families, bridge, translator, clc, collections, …) and a few to the product's groups (``models calibrate``,
``tags vocab ship``).

A plugin is a callable ``register(commands)`` named in the ``polyglot.commands`` entry-point group; it fills a
:class:`PluginCommands` with what adds each command (a :data:`Registrar`, as for the product's own, so the
commands' modules load only when a command is built). Nothing here imports a plugin's package by name: the
product's commands run without any, and ``app`` imports nothing of ``training``.

Plugins are looked up only when ``polyglot`` needs a name it does not have, or lists its commands
(``--help``): ``polyglot index add`` loads none.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import typer
from typer.core import TyperGroup

log = logging.getLogger(__name__)

GROUP = "polyglot.commands"  # entry points: ``name = "package.module:register"``
# The lab's registrar, for a checkout whose own entry points are not installed (see :func:`plugin_commands`).
LAB = "training.cli"

# What adds a top-level command to a root Typer, given the name the root lists it under.
Registrar = Callable[[typer.Typer, str], None]


def sub_app(module: str, attribute: str = "app") -> Registrar:
    """A command group that is a module's Typer app (``polyglot models …``)."""

    def register(root: typer.Typer, name: str) -> None:
        root.add_typer(getattr(importlib.import_module(module), attribute), name=name)

    return register


def registered(module: str) -> Registrar:
    """Commands a module adds itself, under its own names, with its ``register(cli)`` (``polyglot search``,
    ``polyglot train …``)."""

    def register(root: typer.Typer, name: str) -> None:
        importlib.import_module(module).register(root)

    return register


@dataclass
class PluginCommands:
    """What plugins add: top-level commands by name (in the order ``--help`` lists them), and, by the name of a
    product group (``models``, ``vocab``), functions that return a Typer holding the commands to add to it."""

    commands: dict[str, Registrar] = field(default_factory=dict)
    groups: dict[str, list[Callable[[], typer.Typer]]] = field(default_factory=dict)


_found: PluginCommands | None = None


def plugin_commands() -> PluginCommands:
    """Every plugin's commands, read once: the ``polyglot.commands`` entry points and, when no installed
    distribution declares one, the lab's ``training.cli`` if it is importable.

    The fallback is for a checkout run from its own folder (``PYTHONPATH=.``, or a worktree beside an editable
    install of another one): entry points come from the installed distribution's metadata, which lists those of
    the tree it was installed from, so a tree's own lab would otherwise go unseen. A plugin that does not import
    (the Docker image has no lab, though its metadata names it) adds nothing."""
    global _found
    if _found is not None:
        return _found
    found = PluginCommands()
    points = list(entry_points(group=GROUP))
    registrars: list[Callable[[PluginCommands], object]] = []
    for point in points:
        try:
            registrars.append(point.load())
        except ImportError as exc:
            log.debug("command plugin %s not importable: %s", point.value, exc)
    if not points and _importable(LAB.partition(".")[0]):
        try:
            registrars.append(importlib.import_module(LAB).register)
        except ImportError as exc:
            log.debug("the lab's commands (%s) not importable: %s", LAB, exc)
    for register in registrars:
        register(found)
    _found = found
    return found


class PluggableGroup(TyperGroup):
    """A product command group that plugins may add commands to (``polyglot models``, ``polyglot tags vocab``):
    its own commands resolve without any plugin; an unknown name, or the listing (``--help``), loads the
    plugins' commands for this group once."""

    def _extend(self) -> None:
        if getattr(self, "_extended", False):
            return
        self._extended = True
        for holder in plugin_commands().groups.get(str(self.name), []):
            for name, command in typer.main.get_group(holder()).commands.items():
                self.commands.setdefault(name, command)

    # ctx: the click Context Typer passes (Typer vendors its own click, so its type is not importable as such)
    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            self._extend()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: Any) -> list[str]:
        self._extend()
        return super().list_commands(ctx)


def _importable(package: str) -> bool:
    """Whether ``package`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False
