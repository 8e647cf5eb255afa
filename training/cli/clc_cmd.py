"""``polyglot clc fit|index``: cross-lingual consistency's classifier (CLC-C) and retrieval translator index."""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.common import USER_ERRORS, check_data, console, fail
from app.cli.settings_cli import read_settings
from training.cli.evaluate_cmd import check_clc_options, clc_settings

app = typer.Typer(
    help="Cross-lingual consistency: a query scored together with its translations.", no_args_is_help=True
)


@app.command("fit")
def fit_command(
    data: Path = typer.Option(..., help="Data set folder; CLC-C is fitted on a held-out part of its train split."),
    out: Path = typer.Option(..., help="Folder for config.json + model.safetensors (POLYGLOT_CLC_CLASSIFIER)."),
    translator: str | None = typer.Option(
        None, help="gloss, retrieval, mt or parallel (the train photos' parallel captions); default the settings'."
    ),
    lexicons: Path | None = typer.Option(None, help="Dictionaries of the gloss translator (en-XX.tsv)."),
    translation_corpus: Path | None = typer.Option(None, help="Caption collection of the retrieval translator."),
    extra_captions: list[Path] = typer.Option([], help="More caption files of the same schema (repeatable)."),
    holdout: int = typer.Option(500, min=10, help="Train photos held out for CLC-C (a fixed random subset)."),
    max_queries: int = typer.Option(4000, min=10, help="Captions of those photos used (random, seed 0): memory."),
    iterations: int = typer.Option(30, min=1, max=10_000, help="Full-batch iterations (the paper: 30)."),
    lr: float = typer.Option(0.01, min=1e-6, max=10.0, help="Adam's learning rate."),
) -> None:
    """Fit CLC-C's MLP on the served pipeline's per-language scores of held-out train photos."""
    import numpy as np

    from indexer.query import QueryCache, QueryPipeline, load_models
    from indexer.query.models import load_clc
    from training.clc.fit import fit_classifier, parallel_translator, slot_scores
    from training.data.prepared import prepare_split

    check_data(data)
    check_clc_options("average", translator)
    settings = read_settings()
    settings = clc_settings(settings, translator, lexicons, translation_corpus, None)
    settings = settings.model_copy(update={"clc_classifier": None})
    try:
        cache = settings.resolved_cache_dir
        models = load_models(settings, sentence_cache=cache, clc=False)
        split = prepare_split(
            data, "train", None, models.image_encoder, None, cache, max_images=holdout, extra_captions=extra_captions
        )
        load_clc(models, settings, parallel_translator(split) if translator == "parallel" else None, cache, {})
        pipeline = QueryPipeline(models, settings, QueryCache(0))
        pipeline.check_clc("average")
        rng = np.random.default_rng(0)
        images = rng.permutation(len(split.images))
        cut = int(len(images) * 0.8)
        fit_images, val_images = np.sort(images[:cut]), np.sort(images[cut:])
        rows = rng.permutation(len(split.caption_text))[:max_queries]
        in_fit = np.isin(split.caption_image[rows], fit_images)
        fit = slot_scores(pipeline, split, np.sort(rows[in_fit]), fit_images)
        val = slot_scores(pipeline, split, np.sort(rows[~in_fit]), val_images)
        classifier, report = fit_classifier(fit, val, pipeline.clc_languages, iterations, lr)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    name = models.translator.name if models.translator is not None else "?"
    classifier.meta.update(translator=name, holdout_images=holdout, data=str(data), text_model=models.label)
    classifier.save(out)
    console.print(
        f"CLC-C ({name}, languages {', '.join(classifier.languages)}) → {out}: held-out mean t2i recall "
        f"query {report['val_mean_recall_query']:.3f}, CLC-A {report['val_mean_recall_average']:.3f}, "
        f"CLC-C {report['val_mean_recall_classifier']:.3f} (iteration {report['iteration']} of {iterations})"
    )


@app.command("index")
def index_command(
    translation_corpus: Path = typer.Option(..., help="A captions.jsonl (or a folder with one) to translate from."),
) -> None:
    """Build (once) the retrieval translator's sentence index of a caption collection (POLYGLOT_CLC_CORPUS)."""
    from training.translation.factory import load_translator

    settings = read_settings().model_copy(update={"clc_translator": "retrieval", "clc_corpus": translation_corpus})
    try:
        translator = load_translator(settings)
    except USER_ERRORS as exc:
        raise fail(str(exc)) from None
    sizes = getattr(translator, "ranges", {})
    console.print("translation index ready: " + ", ".join(f"{k} {b - a:,}" for k, (a, b) in sizes.items()))


def register(cli: typer.Typer) -> None:
    cli.add_typer(app, name="clc")
