"""``polyglot train align --method cca|pcca|dcca-noi|dpcca-a|dpcca-b``: the DPCCA family (training/align/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from app.cli.common import USER_ERRORS, console, fail
from app.cli.settings_cli import read_settings
from training.cli import train_options as shared

# Kept here (not imported from training.align) so that the command line lists them without loading the family.
ALIGN_METHODS = ("raw", "cca", "pcca", "dcca-noi", "dpcca-a", "dpcca-b")  # raw: no alignment (reference)


def print_report(report: dict[str, Any], title: str) -> None:
    table = Table("split", "direction", "R@1", "BLEU+1", "queries", title=title)
    for part in ("holdout", "dev"):
        for direction, row in report.get(part, {}).items():
            table.add_row(part, direction, f"{row['r1']:.3f}", f"{row['bleu1']:.3f}", str(row["queries"]))
    Console().print(table)


def register(train_app: typer.Typer) -> None:
    @train_app.command("align")
    @shared.with_options(shared.schedule("epochs", "patience", "batch_size", "lr", "seed"))
    def align_command(
        ctx: typer.Context,
        method: str = typer.Option(
            ..., help=f"The alignment of two languages' captions: {', '.join(ALIGN_METHODS)} (--langs x,y)."
        ),
        data: list[Path] = shared.DATA,
        out: Path = shared.OUT,
        split: str = shared.SPLIT,
        dev_split: str = typer.Option("dev", help="Split the saved report measures; '' for none."),
        langs: str = typer.Option(..., help="The two languages aligned, x,y (e.g. en,de)."),
        text_encoder: str | None = typer.Option(None, help="Sentence encoder of both languages (default: muse)."),
        image_encoder: str | None = shared.IMAGE_ENCODER,
        cca_dim: int = typer.Option(128, min=1, help="Dimension L of the shared space."),
        cca_eps: float = typer.Option(1e-3, min=0.0, help="ε added to covariance diagonals."),
        holdout: float = typer.Option(
            0.1, min=0.0, max=0.5, help="Share of the training images held out for selection."
        ),
        time_constant: float = typer.Option(0.9, min=0.0, max=0.999, help="Deep alignments: covariance ρ (Eq. 12)."),
        activation: str = typer.Option("tanh", help="Deep alignments: tanh, sigmoid or relu."),
        hidden_layers: int = typer.Option(2, min=0, max=8, help="Deep alignments: hidden layers (width = input)."),
        threads: int | None = shared.THREADS,
        json_out: Path | None = typer.Option(None, "--json", help="Also write the holdout and dev R@1 here."),
        c2c_json: Path | None = typer.Option(None, help="The same as --json (the old spelling's name)."),
        **options: Any,
    ) -> None:
        """Align two languages' frozen sentence features through the photos (CCA, PCCA, deep CCA / PCCA by NOI)."""
        from indexer.atomic import atomic_write_json
        from training.align.alignment import AlignConfig, run
        from training.align.dcca import ACTIVATIONS, NoiConfig

        settings = read_settings()
        folder = shared.one_folder(data)
        if method not in ALIGN_METHODS:
            raise fail(f"unknown method {method!r}; choose tower or one of: {', '.join(ALIGN_METHODS)}")
        pair = [code.strip().lower() for code in langs.split(",") if code.strip()]
        if len(pair) != 2 or pair[0] == pair[1]:
            raise fail(f"--method {method} aligns two languages: give --langs x,y (e.g. en,de), not {langs!r}")
        if activation not in ACTIVATIONS:
            raise fail(f"unknown activation {activation!r}; choose one of: {', '.join(ACTIVATIONS)}")
        shared.set_threads(threads, settings.models.torch_threads)
        noi = NoiConfig(hidden_layers=hidden_layers, activation=activation, rho=time_constant, **options)
        config = AlignConfig(
            data=folder,
            out=out,
            cache_dir=settings.resolved_cache_dir,
            settings=settings,
            method=method,
            langs=(pair[0], pair[1]),
            text_encoder=text_encoder or "muse",
            image_encoder=image_encoder or settings.models.image_encoder,
            split=split,
            dev_split=dev_split or None,
            holdout=holdout,
            dim=cca_dim,
            eps=cca_eps,
            noi=noi,
            command=shared.command_line(ctx),
        )
        try:
            report = run(config)
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None
        print_report(report, f"{method} {pair[0]}↔{pair[1]}")
        console.print(f"[green]saved[/] {out} ({report['seconds']:.0f} s)")
        written = c2c_json or json_out
        if written:
            atomic_write_json(written, report)
