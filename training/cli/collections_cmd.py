"""``polyglot collections split`` (collections that share no photos) and ``polyglot pseudopairs make``."""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.common import USER_ERRORS, check_data, console, fail
from app.cli.settings_cli import read_settings

collections_app = typer.Typer(help="Collections of photos with captions: cut a data set into disjoint ones.")
pseudopairs_app = typer.Typer(help="Pseudo-pairs: caption one collection's photos with another's captions.")


@collections_app.command("split")
def split_command(
    data: Path = typer.Option(..., help="Source data set folder (images/, captions.jsonl, splits/*.txt)."),
    out: Path = typer.Option(..., help="Folder for the collections (one sub-folder per part), e.g. var/collections/x."),
    part: list[str] = typer.Option(
        ...,
        help="NAME=LANG[:SOURCE[+SOURCE]][,LANG…] (repeatable): one collection. The split's photos are cut into "
        "one equal group per part; NAME@OTHER=… shares OTHER's photos; a single part keeps every photo.",
    ),
    split: str = typer.Option("train", help="Split of the source whose photos are divided."),
    heldout: float = typer.Option(0.1, min=0.0, max=0.9, help="Share of each collection's photos held out."),
    seed: int = typer.Option(0, help="Seed of the photo shuffle (the same seed gives the same groups)."),
    extra_captions: list[Path] = typer.Option([], help="More caption files of the source's photos (repeatable)."),
) -> None:
    """Write collections that share no photos (images/ are symbolic links; nothing is copied)."""
    from training.data.collections import parse_part, split_collections

    check_data(data)
    try:
        summary = split_collections(
            data, out, [parse_part(p) for p in part], split, heldout, seed, list(extra_captions)
        )
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    for name, counts in summary.items():
        console.print(
            f"[green]{out / name}[/]: {counts['train_photos']} train + {counts['heldout_photos']} held-out photos, "
            f"captions {counts['captions']}"
        )


@pseudopairs_app.command("make")
def make_command(
    model: Path = typer.Option(..., help="A trained tower folder: its sentence similarities pick the pairs."),
    from_dir: Path = typer.Option(..., "--from", help="Collection whose captions are transferred."),
    to_dir: Path = typer.Option(..., "--to", help="Collection whose photos receive them."),
    out: Path = typer.Option(..., help="Folder for the pseudo-pair collection."),
    keep: str = typer.Option("all", "--filter", help="all, top25 (keep the best 25 %) or drop-bottom25."),
    split: str = typer.Option("train", help="Split of both collections to pair."),
    with_originals: bool = typer.Option(
        False, help="Also write the target's own captions, so that training has caption–caption pairs."
    ),
) -> None:
    """For each caption of --to, the most similar caption of --from (another language) joins its photo."""
    from training.tower.pseudopairs import FILTERS, TOP, make_pseudopairs

    if keep not in FILTERS:
        raise fail(f"unknown --filter {keep!r}; choose one of: {', '.join(FILTERS)}")
    for folder in (model, from_dir, to_dir):
        check_data(folder)
    settings = read_settings()
    try:
        report = make_pseudopairs(
            model,
            from_dir,
            to_dir,
            out,
            settings.resolved_cache_dir,
            settings,
            split,
            keep,
            with_originals,
        )
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    hub = report["hubness_kept"]
    console.print(
        f"[green]{out}[/]: {report['rows_written']} pseudo captions on {report['photos']} photos "
        f"(filter {keep}); {hub['distinct_used']} of {hub['source_captions']} source captions used "
        f"({hub['share_used']:.1%}), the top {TOP} cover {hub[f'top{TOP}_share_of_pairs']:.1%} of the pairs"
    )
