"""``polyglot train --method smalr|hem|la``: the options of SMALR training and the run (training/smalr/)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from indexer.settings import Settings

SMALR_METHODS = ("smalr", "hem", "la")
console = Console(stderr=True, soft_wrap=True)  # one line per message, whatever the width


@dataclass
class SmalrOptions:
    k_specific: int
    latent_size: int
    word_features: str
    dims: str  # word, GRU hidden, joint
    pretrain_epochs: int
    mask_rate: float
    top_n: int


def run_smalr(
    settings: Settings,
    method: str,
    data: Path,
    out: Path,
    split: str,
    langs: list[str],
    image_encoder: str | None,
    image_space_from: Path | None,
    options: SmalrOptions,
    holdout: float,
    max_images: int | None,
    captions_per_lang: int | None,
    epochs: int,
    patience: int,
    batch_size: int,
    lr: float,
    seed: int,
    command: str,
    json_out: Path | None = None,
) -> dict[str, object]:
    """Train, save the tower in ``out``, print the held-out recalls; returns the training record (also written
    to ``json_out`` when given)."""
    from indexer.atomic import atomic_write_json
    from training.smalr.train import SmalrConfig, train_smalr

    dims = [int(part) for part in options.dims.split(",") if part.strip()]
    if len(dims) != 3 or min(dims) < 1:
        raise ValueError(f"--smalr-dims needs three positive widths (word,hidden,joint), not {options.dims!r}")
    config = SmalrConfig(
        data=data, out=out, cache_dir=settings.resolved_cache_dir, settings=settings,
        langs=langs, method=method, split=split, holdout=holdout, max_images=max_images,
        captions_per_lang=captions_per_lang, image_encoder=image_encoder or settings.models.image_encoder,
        image_space_from=image_space_from, word_features=options.word_features, k_specific=options.k_specific,
        n_latent=options.latent_size, word_dim=dims[0], hidden_dim=dims[1], joint_dim=dims[2],
        pretrain_epochs=options.pretrain_epochs, epochs=epochs, patience=patience, batch_size=batch_size, lr=lr,
        seed=seed, mask_rate=options.mask_rate, top_n=options.top_n, command=command,
    )  # fmt: skip
    result = train_smalr(config)
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
    record = {"heldout": result.heldout, "parameters": result.parameters, "best_epoch": result.best_epoch}
    if json_out:
        atomic_write_json(json_out, record)
    return record
