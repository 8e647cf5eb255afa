"""What the ``polyglot train`` families share: the schedule options (built from the fields of
:class:`training.schedule.Schedule`), the options of every family trained on a data set folder, options generated
from declarations (:func:`with_options`), and the command line a model card records."""

from __future__ import annotations

import inspect
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import typer

from app.cli.common import check_data, fail
from training.schedule import Schedule

Command = TypeVar("Command", bound=Callable[..., Any])
LEGACY = "polyglot.train.legacy"  # ctx.meta flag: the command was given in its old spelling (`polyglot train --…`)

# Typer's keywords for each schedule field on the command line; the default is the family's (see schedule()).
SCHEDULE_HELP: dict[str, dict[str, Any]] = {
    "epochs": {"min": 1, "max": 1000, "help": "Passes over the training data."},
    "steps": {"min": 1, "help": "Optimiser steps."},
    "patience": {"min": 1, "help": "Stop after this many epochs without dev improvement."},
    "batch_size": {"min": 2, "max": 8192, "help": "Training pairs per step."},
    "lr": {"min": 1e-7, "max": 1.0, "help": "Learning rate."},
    "beta1": {"min": 0.0, "max": 0.9999, "help": "Adam β1 (the paper's 0.99 by default)."},
    "warmup": {"min": 0, "help": "Steps of linear warm-up to the peak learning rate."},
    "seed": {"help": "Seed of every random draw (initial weights, batches)."},
}

# Options of every family trained on a data set folder (typer copies an option for each command that uses it).
DATA = typer.Option(..., help="Data set folder (images/, captions.jsonl, splits/*.txt); repeatable with --disjoint.")
OUT = typer.Option(..., help="Folder for the trained model (config.json, model.safetensors, README.md).")
SPLIT = typer.Option("train", help="Split to train on.")
LANGS = typer.Option("en", help="Training languages, comma-separated: en (zero-shot) or en,de,fr,cs,pt.")
CAPTIONS_PER_LANG = typer.Option(
    None, min=1, help="Use only the first N captions of each image in each language (default: all)."
)
MAX_IMAGES = typer.Option(None, min=2, help="Train on a fixed random subset of N images of the split (default: all).")
TEXT_ENCODER = typer.Option(None, help="Text encoder (default: settings text_encoder).")
IMAGE_ENCODER = typer.Option(None, help="Image encoder (default: settings image_encoder).")
IMAGE_SPACE_FROM = typer.Option(None, help="Reuse this tower's image space (mean) so indexes stay valid.")
THREADS = typer.Option(None, min=1, help="torch threads (default: settings torch_threads).")
JSON_OUT = typer.Option(None, "--json", help="Also write the dev recalls here (as evaluate).")


def schedule(*names: str, **defaults: Any) -> list[inspect.Parameter]:
    """One option per schedule field in ``names``, defaulting to :class:`Schedule`'s value or the family's own
    (``defaults``)."""
    base = Schedule(**defaults)
    return [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=typer.Option(getattr(base, name), **SCHEDULE_HELP[name]),
            annotation=type(getattr(base, name)),
        )
        for name in names
    ]


def with_options(*generated: Iterable[inspect.Parameter]) -> Callable[[Command], Command]:
    """Add generated options to a command: they replace its ``**options`` in the signature typer reads, and
    reach the function in ``options``."""

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        declared = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        added = [parameter for group in generated for parameter in group]
        setattr(command, "__signature__", signature.replace(parameters=[*declared, *added]))  # noqa: B010
        return command

    return decorate


def command_line(ctx: typer.Context) -> str:
    """The command as the user gave it (options not left at their defaults), for the model card."""
    words: list[str] = []
    node: Any = ctx
    while node.parent is not None:  # e.g. train, tower (the root is `polyglot`)
        words.insert(0, node.info_name or "")
        node = node.parent
    if ctx.meta.get(LEGACY):  # given as `polyglot train --…`: recorded so
        words = words[:1]
    parts = ["polyglot", *words]
    for param in ctx.command.params:
        # Typer vendors its own click, so compare by duck type and enum name, not by class.
        if getattr(param, "param_type_name", "") != "option" or param.name is None:
            continue
        source = ctx.get_parameter_source(param.name)
        if source is None or source.name == "DEFAULT":
            continue
        value = ctx.params[param.name]
        if isinstance(value, bool):
            names = param.opts if value else param.secondary_opts
            parts.append(names[0])
        elif isinstance(value, list | tuple):  # a repeatable option: once per value
            for item in value:
                parts += [param.opts[0], str(item)]
        else:
            parts += [param.opts[0], str(value)]
    return shlex.join(parts)


def one_folder(data: list[Path]) -> Path:
    """The data set of a family that trains on one folder (several are the tower's --disjoint)."""
    for folder in data:
        check_data(folder)
    if len(data) > 1:
        raise fail("several --data folders need --disjoint")
    return data[0]


def set_threads(threads: int | None, settings_threads: int | None, always: bool = False) -> None:
    import torch

    if threads or settings_threads or always:
        torch.set_num_threads(threads or settings_threads or 1)
