"""``polyglot train smalr --method smalr|hem|la``: SMALR and its baselines (training/smalr/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from app.cli.common import USER_ERRORS, console, fail
from app.cli.settings_cli import read_settings
from training.cli import train_options as shared

SMALR_METHODS = ("smalr", "hem", "la")


def print_heldout(result: Any, out: Path, method: str) -> None:
    table = Table("lang", "t2i R@1", "R@5", "R@10", "i2t R@1", "R@5", "R@10", "mR", title="held-out train images")
    for lang, block in result.heldout.items():
        t2i, i2t = block["t2i"], block["i2t"]
        cells = [t2i["r1"], t2i["r5"], t2i["r10"], i2t["r1"], i2t["r5"], i2t["r10"], block["mR"]]
        table.add_row(lang, *(f"{c:.3f}" for c in cells))
    Console().print(table)
    console.print(
        f"[green]saved[/] {out} ({method}, best epoch {result.best_epoch}, {result.seconds:.0f} s; parameters: "
        f"{result.parameters['training']:,} trained, {result.parameters['query_time']:,} at query time)"
    )


def register(train_app: typer.Typer) -> None:
    @train_app.command("smalr")
    @shared.with_options(shared.schedule("epochs", "patience", "batch_size", "lr", "seed"))
    def smalr_command(
        ctx: typer.Context,
        method: str = typer.Option(
            "smalr", help=f"{', '.join(SMALR_METHODS)}: SMALR, its hybrid embedding alone, or a latent vocabulary."
        ),
        data: list[Path] = shared.DATA,
        out: Path = shared.OUT,
        split: str = shared.SPLIT,
        langs: str = shared.LANGS,
        captions_per_lang: int | None = shared.CAPTIONS_PER_LANG,
        max_images: int | None = shared.MAX_IMAGES,
        image_encoder: str | None = shared.IMAGE_ENCODER,
        image_space_from: Path | None = shared.IMAGE_SPACE_FROM,
        k_specific: int = typer.Option(5000, min=0, help="SMALR/HEM: language-specific words per language (K)."),
        latent_size: int = typer.Option(40000, min=1, help="Latent vocabulary size before pruning."),
        word_features: str = typer.Option(
            "encoder:muse",
            help="Word features, encoder:NAME (the word through a bundled encoder) or fasttext:DIR "
            "(DIR/cc.<lang>.300.vec); PCA to 50-d.",
        ),
        smalr_dims: str = typer.Option(
            "200,256,256", help="Word embedding, GRU hidden, joint widths (the paper's: 512 words, 512 joint)."
        ),
        pretrain_epochs: int = typer.Option(5, min=0, max=100, help="Epochs of latent-vocabulary pretraining."),
        mask_rate: float = typer.Option(0.2, min=0.0, max=0.9, help="Share of words MCLM masks."),
        triplet_top_n: int = typer.Option(
            10, min=1, help="Most violated negatives per anchor in its triplet losses (paper: 10)."
        ),
        holdout: float = typer.Option(
            0.1, min=0.0, max=0.5, help="Share of the training images held out for selection."
        ),
        threads: int | None = shared.THREADS,
        json_out: Path | None = typer.Option(None, "--json", help="Also write the held-out recalls here."),
        **options: Any,
    ) -> None:
        """Train a SMALR tower (Burns et al. 2020): hybrid vocabulary, GRU, MCLM, adversary, neighbourhoods."""
        from indexer.atomic import atomic_write_json
        from training.smalr.train import SmalrConfig, train_smalr
        from training.tower.train import parse_langs

        settings = read_settings()
        folder = shared.one_folder(data)
        if method not in SMALR_METHODS:
            raise fail(f"unknown method {method!r}; choose one of: {', '.join(SMALR_METHODS)}")
        shared.set_threads(threads, settings.models.torch_threads, always=True)
        try:
            dims = [int(part) for part in smalr_dims.split(",") if part.strip()]
            if len(dims) != 3 or min(dims) < 1:
                raise ValueError(f"--smalr-dims needs three positive widths (word,hidden,joint), not {smalr_dims!r}")
            config = SmalrConfig(
                data=folder, out=out, cache_dir=settings.resolved_cache_dir, settings=settings,
                langs=parse_langs(langs), method=method, split=split, holdout=holdout, max_images=max_images,
                captions_per_lang=captions_per_lang, image_encoder=image_encoder or settings.models.image_encoder,
                image_space_from=image_space_from, word_features=word_features, k_specific=k_specific,
                n_latent=latent_size, word_dim=dims[0], hidden_dim=dims[1], joint_dim=dims[2],
                pretrain_epochs=pretrain_epochs, mask_rate=mask_rate, top_n=triplet_top_n,
                command=shared.command_line(ctx), **options,
            )  # fmt: skip
            result = train_smalr(config)
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None
        print_heldout(result, out, method)
        if json_out:
            record = {"heldout": result.heldout, "parameters": result.parameters, "best_epoch": result.best_epoch}
            atomic_write_json(json_out, record)
