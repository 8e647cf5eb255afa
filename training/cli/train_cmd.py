"""``polyglot train tower|student|align|smalr``: one command per training family (tower_cmd, student_cmd,
align_cmd, smalr_cmd; what they share: train_options).

The spellings of before the families keep running, printing nothing more: ``polyglot train --data … [--method M]``
(what the model cards of earlier towers and alignments recorded) runs the family M belongs to (``tower`` when
absent), and ``polyglot train-student`` is ``polyglot train student``.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup
from typer.core import _click as click  # typer's own (vendored) click, whose Context its groups take

from training.cli import align_cmd, smalr_cmd, student_cmd, tower_cmd
from training.cli.train_options import LEGACY


def family_of(args: list[str]) -> list[str]:
    """The old ``train --… [--method M] …`` as the family command it meant: ``tower`` (its ``--method tower``
    dropped), or ``smalr`` / ``align`` keeping ``--method M`` (align refuses an unknown method with the list)."""
    method, at = "tower", None
    for i, arg in enumerate(args):
        if arg == "--method" and i + 1 < len(args):
            method, at = args[i + 1], slice(i, i + 2)
            break
        if arg.startswith("--method="):
            method, at = arg.partition("=")[2], slice(i, i + 1)
            break
    if method == "tower":
        rest = list(args)
        if at is not None:
            del rest[at]
        return ["tower", *rest]
    return ["smalr" if method in smalr_cmd.SMALR_METHODS else "align", *args]


class TrainGroup(TyperGroup):
    """The families, and the old spelling: options straight after ``train`` name no family."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0].startswith("-") and args[0] not in ctx.help_option_names:
            ctx.meta[LEGACY] = True
            args = family_of(args)
        return super().parse_args(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:  # the families in the order a newcomer meets them
        return [name for name in ("student", "tower", "align", "smalr") if name in self.commands]


train_app = typer.Typer(
    cls=TrainGroup,
    no_args_is_help=True,
    help="Train a model, by family: the served student, the research MLP tower (with distillation and disjoint "
    "collections), a DPCCA-family caption alignment, or a SMALR tower.",
)


def register(cli: typer.Typer) -> None:
    families: tuple[Any, ...] = (tower_cmd, align_cmd, smalr_cmd)
    for family in families:
        family.register(train_app)
    student_cmd.register(train_app, cli)  # also the hidden `polyglot train-student`
    cli.add_typer(train_app, name="train")
