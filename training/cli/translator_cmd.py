"""``polyglot translator fit|curves``: the Translator of "Grounding multilingual concepts with vision"."""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.common import USER_ERRORS, check_data, console, fail
from app.cli.settings_cli import read_settings

app = typer.Typer(
    help="Map a language's (or another encoder's) embeddings into a tower's input space.", no_args_is_help=True
)


@app.command("fit")
def fit_command(
    lexicon: Path = typer.Option(
        ..., help="MUSE dictionary english<TAB>other, e.g. ../shared/data/lexicons/en-zh.tsv."
    ),
    lang: str = typer.Option(..., help="The new language's code (the dictionary's other side)."),
    out: Path = typer.Option(..., help="Folder for translator.json + translator.safetensors."),
    tower: Path | None = typer.Option(None, help="The pivot tower (its text encoder embeds English words)."),
    source_encoder: str | None = typer.Option(None, help="Encoder of the new language (default: the pivot's)."),
    data: Path | None = typer.Option(None, help="Data set whose train English captions restrict the words."),
    init: str = typer.Option("procrustes", help="procrustes (orthogonal) or lstsq (argmin ‖MT − I‖²)."),
    rcsls_steps: int = typer.Option(50, min=0, max=10000, help="RCSLS refinement steps (0 = none)."),
    k: int = typer.Option(10, min=1, help="RCSLS neighbours."),
    lr: float = typer.Option(1.0, min=1e-6, help="RCSLS step size."),
) -> None:
    """Fit M on the lexicon's word pairs (Procrustes/least squares, then RCSLS); report word-translation P@1."""
    from indexer.encoders import build_text_encoder
    from indexer.tower import TextTower
    from training.asset_paths import research_tower_path
    from training.data.dataset import load_dataset
    from training.translator.fit import caption_vocabulary, fit_translator, read_lexicon, save_translator, split_lexicon

    settings = read_settings()
    pivot = tower or settings.models.tower_path or research_tower_path()
    try:
        target_name = TextTower.read_config(pivot)["text_encoder"]
        target = build_text_encoder(settings, target_name)
        source = build_text_encoder(settings, source_encoder or target_name)
        vocabulary = None
        if data is not None:
            check_data(data)
            vocabulary = caption_vocabulary(c.text for c in load_dataset(data, "train", ["en"]).captions)
        split = split_lexicon(read_lexicon(lexicon, vocabulary))
        m, report = fit_translator(split, source, target, settings.resolved_cache_dir, init, rcsls_steps, k, lr)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    meta = {
        "lang": lang,
        "source_encoder": source.name,
        "target_encoder": target.name,
        "pivot": str(pivot),
        "lexicon": str(lexicon),
        "report": report,
    }
    save_translator(out, m, meta)
    console.print(
        f"[green]saved[/] {out}: {report['train_pairs']} pairs; word translation P@1 on {report['test_words']} test "
        f"words: init {report['p1_init']:.3f} → RCSLS {report['p1_rcsls']:.3f}"
        + (f" (no map: {report['p1_identity']:.3f})" if "p1_identity" in report else "")
    )


@app.command("curves")
def curves_command(
    data: Path = typer.Option(..., help="Data set folder (images/, captions.jsonl, splits/)."),
    lang: str = typer.Option(..., help="The language to on-board."),
    translator: Path | None = typer.Option(None, help="A fitted translator folder (T2); without it: FS and T1."),
    tower: Path | None = typer.Option(
        None, help="The pivot tower (default: POLYGLOT_TOWER_PATH, else training/assets/tower)."
    ),
    source_encoder: str | None = typer.Option(None, help="Encoder of the new language (default: the translator's)."),
    extra_captions: list[Path] = typer.Option([], help="More caption files (e.g. more-langs/f8k-captions.jsonl)."),
    sources: str | None = typer.Option(None, help="Keep only these caption sources of the language (comma-separated)."),
    sizes: str = typer.Option("100,300,1000,3000,10000,0", help="Training caption counts; 0 = all."),
    protocols: str = typer.Option("FS,T1,T2", help="Protocols to run."),
    max_steps: int = typer.Option(1500, min=1),
    lr: float = typer.Option(1e-3, min=1e-7),
    threads: int | None = typer.Option(None, min=1, help="torch threads."),
    json_out: Path | None = typer.Option(None, "--json", help="Write the curves here."),
    plot_out: Path | None = typer.Option(None, "--plot", help="Write the Figure-3 style PNG here."),
) -> None:
    """Learning curves of FS, T1 and T2 (R@1/5/10 both directions) against the number of training captions."""
    import numpy as np
    import torch

    from indexer.atomic import atomic_write_json
    from indexer.encoders import build_image_encoder, build_text_encoder
    from indexer.tower import TextTower
    from training.asset_paths import research_tower_path
    from training.data.prepared import prepare_split
    from training.translator.curves import PROTOCOLS, CurveSettings, learning_curves, plot, subset
    from training.translator.fit import load_translator

    settings = read_settings()
    check_data(data)
    if threads:
        torch.set_num_threads(threads)
    chosen = tuple(p.strip().upper() for p in protocols.split(",") if p.strip())
    if not chosen or set(chosen) - set(PROTOCOLS):
        raise fail(f"--protocols takes some of {', '.join(PROTOCOLS)}")
    try:
        pivot = TextTower.from_pretrained(tower or settings.models.tower_path or research_tower_path())
        m, meta = load_translator(translator) if translator is not None else (None, {})
        encoder_name = source_encoder or meta.get("source_encoder") or pivot.text_encoder
        text = build_text_encoder(settings, encoder_name)
        image = build_image_encoder(settings, pivot.image_encoder)
        cache = settings.resolved_cache_dir
        train, dev = (
            prepare_split(data, s, [lang], image, text, cache, extra_captions=extra_captions) for s in ("train", "dev")
        )
        if sources:
            keep = set(sources.split(","))
            train, dev = (
                subset(
                    s,
                    np.flatnonzero([src in keep for src in (s.caption_source if s.caption_source is not None else [])]),
                )
                for s in (train, dev)
            )
        curve = CurveSettings(sizes=[int(n) for n in sizes.split(",") if n.strip()], steps=max_steps, lr=lr)
        result = learning_curves(pivot, m, train, dev, lang, curve, chosen, progress=console.print)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    result.update(
        source_encoder=text.name, pivot_encoder=pivot.text_encoder, translator=str(translator) if translator else None
    )
    if json_out:
        atomic_write_json(json_out, result)
    if plot_out:
        plot(result, plot_out)
        console.print(f"[green]plot[/] {plot_out}")


def register(cli: typer.Typer) -> None:
    cli.add_typer(app, name="translator")
