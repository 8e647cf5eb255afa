"""``polyglot train --method cca|pcca|dcca-noi|dpcca-a|dpcca-b``: the DPCCA family (training/align.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from app.cli.evaluate_cmd import USER_ERRORS, fail
from indexer.settings import Settings

# Kept here (not imported from training.align) so that `polyglot --help` does not import torch.
ALIGN_METHODS = ("raw", "cca", "pcca", "dcca-noi", "dpcca-a", "dpcca-b")  # raw: no alignment (reference)
console = Console(stderr=True, soft_wrap=True)  # one line per message, whatever the width


@dataclass
class AlignOptions:
    method: str
    dim: int
    eps: float
    holdout: float
    time_constant: float
    activation: str
    hidden_layers: int


def run_alignment(
    settings: Settings,
    data: Path,
    out: Path,
    split: str,
    dev_split: str,
    langs: str,
    text_encoder: str | None,
    image_encoder: str | None,
    options: AlignOptions,
    epochs: int,
    patience: int,
    batch_size: int,
    lr: float,
    seed: int,
    command: str,
    json_out: Path | None,
) -> None:
    from indexer.atomic import atomic_write_json
    from training.align import AlignConfig, run
    from training.dcca import ACTIVATIONS, NoiConfig

    if options.method not in ALIGN_METHODS:
        raise fail(f"unknown method {options.method!r}; choose tower or one of: {', '.join(ALIGN_METHODS)}")
    pair = [code.strip().lower() for code in langs.split(",") if code.strip()]
    if len(pair) != 2 or pair[0] == pair[1]:
        raise fail(f"--method {options.method} aligns two languages: give --langs x,y (e.g. en,de), not {langs!r}")
    if options.activation not in ACTIVATIONS:
        raise fail(f"unknown activation {options.activation!r}; choose one of: {', '.join(ACTIVATIONS)}")
    noi = NoiConfig(
        hidden_layers=options.hidden_layers,
        activation=options.activation,
        rho=options.time_constant,
        lr=lr,
        batch_size=batch_size,
        epochs=epochs,
        seed=seed,
    )
    config = AlignConfig(
        data=data,
        out=out,
        cache_dir=settings.resolved_cache_dir,
        settings=settings,
        method=options.method,
        langs=(pair[0], pair[1]),
        text_encoder=text_encoder or "muse",
        image_encoder=image_encoder or settings.models.image_encoder,
        split=split,
        dev_split=dev_split or None,
        holdout=options.holdout,
        dim=options.dim,
        eps=options.eps,
        noi=noi,
        patience=patience,
        command=command,
    )
    try:
        report = run(config)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    table = Table("split", "direction", "R@1", "BLEU+1", "queries", title=f"{options.method} {pair[0]}↔{pair[1]}")
    for part in ("holdout", "dev"):
        for direction, row in report.get(part, {}).items():
            table.add_row(part, direction, f"{row['r1']:.3f}", f"{row['bleu1']:.3f}", str(row["queries"]))
    Console().print(table)
    console.print(f"[green]saved[/] {out} ({report['seconds']:.0f} s)")
    if json_out:
        atomic_write_json(json_out, report)
