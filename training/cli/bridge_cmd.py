"""``polyglot bridge``: fit a hybrid tower's language bridge from the parallel captions of a data set."""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.common import USER_ERRORS, check_data, console, fail
from app.cli.settings_cli import read_settings


def register(cli: typer.Typer) -> None:
    @cli.command("bridge")
    def bridge(
        data: Path = typer.Option(..., help="Data set folder (captions.jsonl, splits/*.txt)."),
        tower: Path | None = typer.Option(
            None, help="Tower folder to add the bridge to (default: training/assets/tower)."
        ),
        langs: str = typer.Option("cs", help="Languages to bridge (comma-separated), paired with en captions."),
        split: str = typer.Option("train", help="Split whose parallel captions fit the map."),
        ridge: float = typer.Option(0.01, min=0.0, help="Ridge regularisation of the least-squares map."),
    ) -> None:
        """Fill the part of a hybrid embedding whose encoder lacks a language (mUSE: Czech) from the part
        that has it, by a least-squares map fitted on parallel captions (see training/bridge.py)."""
        from indexer.encoders import build_text_encoder
        from indexer.tower import TextTower
        from training.asset_paths import research_tower_path
        from training.data.dataset import load_dataset
        from training.encoders.hybrid import HybridTextEncoder
        from training.tower.bridge_fit import fit_bridge, untouched_cosine

        settings = read_settings()
        check_data(data)
        folder = tower or settings.models.tower_path or research_tower_path()
        codes = [code.strip().lower() for code in langs.split(",") if code.strip()]
        try:
            model = TextTower.from_pretrained(folder)
            encoder = build_text_encoder(settings, model.text_encoder)
            dataset = load_dataset(data, split, [*codes, "en"])
            fitted = fit_bridge(dataset, encoder, codes, settings.resolved_cache_dir, ridge=ridge)
            assert isinstance(encoder, HybridTextEncoder)  # fit_bridge refuses anything else
            before = {code: untouched_cosine(encoder, dataset, code, settings.resolved_cache_dir) for code in codes}
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None
        fitted.info.update({"data": str(data), "split": split, "untouched_cosine": before})
        fitted.save_pretrained(folder)
        console.print(
            f"bridge for {', '.join(codes)} written to {folder}: {fitted.info['pairs']} pairs, held-out cosine to "
            f"the target {fitted.info['held_out_cosine']:.3f} (the part's own embedding: "
            + ", ".join(f"{code} {value:.3f}" for code, value in before.items())
            + ")"
        )
