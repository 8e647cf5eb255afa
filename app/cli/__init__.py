"""``polyglot``: one command line for set-up, indexing, training, evaluation, tagging and serving.

The root loads a command's module only when that command runs (Click's lazy-group pattern): ``polyglot index add``
imports the indexing code and not torch, which only the training, tower and tagging commands need and which costs
~2 s of every start-up on a 2-core machine (``tests/cli/test_cli_startup.py``). ``polyglot --help`` still lists
every command with its help: listing them loads them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperGroup

from app.cli.logging_setup import configure_logging

# What adds a top-level command to a root Typer, given the name the root lists it under.
Registrar = Callable[[typer.Typer, str], None]


def _index(root: typer.Typer, name: str) -> None:
    from app.cli import captions_cmd, index_cmd

    index_cmd.app.add_typer(captions_cmd.app, name="captions")
    root.add_typer(index_cmd.app, name=name)


def _sub_app(module: str, attribute: str = "app") -> Registrar:
    """A command group that is a module's Typer app (``polyglot models …``)."""

    def register(root: typer.Typer, name: str) -> None:
        root.add_typer(getattr(importlib.import_module(module), attribute), name=name)

    return register


def _registered(module: str) -> Registrar:
    """Commands a module adds itself, under its own names, with its ``register(cli)`` (``polyglot search``,
    ``polyglot train …``)."""

    def register(root: typer.Typer, name: str) -> None:
        importlib.import_module(module).register(root)

    return register


# Every top-level command, in the order ``polyglot --help`` lists them, and what registers it.
COMMANDS: dict[str, Registrar] = {
    "index": _index,
    "captions": _sub_app("app.cli.caption_search_cmd"),
    "models": _sub_app("app.cli.models_cmd"),
    "tags": _sub_app("app.cli.tag_cmd", "tags_app"),
    "collections": _sub_app("app.cli.collections_cmd", "collections_app"),
    "pseudopairs": _sub_app("app.cli.collections_cmd", "pseudopairs_app"),
    "tag": _registered("app.cli.tag_cmd"),
    "train": _registered("app.cli.train_cmd"),
    "train-student": _registered("app.cli.train_cmd"),  # hidden: the old spelling of `polyglot train student`
    "evaluate": _registered("app.cli.evaluate_cmd"),
    "search": _registered("app.cli.search_cmd"),
    "bridge": _registered("app.cli.bridge_cmd"),
    "translator": _registered("app.cli.translator_cmd"),
    "clc": _registered("app.cli.clc_cmd"),
    "serve": _registered("app.cli.serve_cmd"),
}


class CommandTable(MutableMapping[str, Any]):
    """The root's commands by name: every name of ``COMMANDS`` is in it, and a command is built from its module the
    first time it is looked up. Everything Typer does with a group's ``commands`` (look one up, list the names,
    suggest one for a typo) sees every command without loading the others."""

    def __init__(self) -> None:
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            holder = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
            COMMANDS[name](holder, name)
            built = typer.main.get_group(holder).commands.get(name)
            if built is None:  # a registrar that does not make the command it is listed for: a bug here
                raise RuntimeError(f"app.cli.COMMANDS[{name!r}] registered no command {name!r}")
            self._built[name] = built
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*COMMANDS, *self._built]))

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._built))


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
