"""``polyglot``: one command line for set-up, indexing, search, tagging and serving, and, where the lab is
installed, its training and evaluation commands.

The root loads a command's module only when that command runs (Click's lazy-group pattern): ``polyglot index add``
imports the indexing code and not torch, which only the tagging and the lab's commands need and which costs ~2 s
of every start-up on a 2-core machine (``tests/cli/test_cli_startup.py``). ``polyglot --help`` still lists every
command with its help: listing them loads them all, the product's ("Photos") first, then the lab's ("Lab").

The lab's commands (evaluate, train, bridge, translator, clc, collections, pseudopairs) live in ``training/cli``
and come in through the ``polyglot.commands`` entry points (:mod:`app.cli.plugins`): nothing here imports
``training``, and a product command never looks the plugins up.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup

from app.cli.logging_setup import configure_logging
from app.cli.plugins import Registrar, plugin_commands, registered, sub_app

USER_PANEL, LAB_PANEL = "Photos", "Lab"


def _index(root: typer.Typer, name: str) -> None:
    from app.cli import captions_cmd, index_cmd

    index_cmd.app.add_typer(captions_cmd.app, name="captions")
    root.add_typer(index_cmd.app, name=name)


# The product's top-level commands, in the order ``polyglot --help`` lists them, and what registers each.
COMMANDS: dict[str, Registrar] = {
    "index": _index,
    "search": registered("app.cli.search_cmd"),
    "serve": registered("app.cli.serve_cmd"),
    "tag": registered("app.cli.tag_cmd"),
    "tags": sub_app("app.cli.tag_cmd", "tags_app"),
    "captions": sub_app("app.cli.caption_search_cmd"),
    "models": sub_app("app.cli.models_cmd"),
}


def all_commands() -> dict[str, Registrar]:
    """The product's commands, then the plugins' (the lab's), each name once: the product's win."""
    return {**COMMANDS, **{k: v for k, v in plugin_commands().commands.items() if k not in COMMANDS}}


class CommandTable(MutableMapping[str, Any]):
    """The root's commands by name: every name of :func:`all_commands` is in it, and a command is built from its
    module the first time it is looked up. Everything Typer does with a group's ``commands`` (look one up, list the
    names, suggest one for a typo) sees every command without loading the others; a product command is found
    without looking for plugins."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            registrar = COMMANDS.get(name) or plugin_commands().commands.get(name)
            if registrar is None:
                raise KeyError(name)
            holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
            registrar(holder, name)
            built = typer.main.get_group(holder).commands.get(name)
            if built is None:  # a registrar that does not make the command it is listed for: a bug
                raise RuntimeError(f"the registrar of {name!r} registered no command {name!r}")
            # Typer's commands and groups carry the panel --help lists them under (click's base class has none).
            built.rich_help_panel = USER_PANEL if name in COMMANDS else LAB_PANEL  # type: ignore[attr-defined]
            self._built[name] = built
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*all_commands(), *self._built]))

    def __len__(self) -> int:
        return len(set(all_commands()) | set(self._built))


class LazyCommands(TyperGroup):
    """The root group, over a :class:`CommandTable`."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = CommandTable()

    # ctx: the click Context Typer passes (Typer vendors its own click, so its type is not importable as such)
    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # the names alone: the commands are built when help asks for each


cli = typer.Typer(
    name="polyglot",
    cls=LazyCommands,
    help="Polyglot Image Search: search photos in any language, caption and tag them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@cli.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logs (structured, to stderr)."),
) -> None:
    configure_logging(verbose)


def main() -> None:
    cli()
