"""``polyglot evaluate``: retrieval recalls per language on a split — by default of exactly what ``/search``
serves with the current settings (:mod:`training.evaluation.served_eval`: the student unless POLYGLOT_TOWER_PATH says
otherwise), or of another text side (``--tower``: a student or a research tower, with its language bridge unless
``--no-bridge``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from app.cli.common import USER_ERRORS, check_data, fail
from app.cli.settings_cli import read_settings
from indexer.settings import Settings
from training.data.text_case import CASE_FORMS

if TYPE_CHECKING:
    from training.evaluation.evaluate import Evaluation


def print_evaluation(title: str, evaluation: Evaluation) -> None:
    pool = evaluation.report["pool_images"]
    columns = ["lang", "queries", "t2i R@1", "R@5", "R@10", "i2t R@1", "R@5", "R@10", "mR"]
    routed = any("route" in block for block in evaluation.report["languages"].values())
    table = Table(*columns, *(["route"] if routed else []), title=f"{title} — pool {pool} images")
    for lang, block in evaluation.report["languages"].items():
        t2i, i2t = block["t2i"], block["i2t"]
        cells = [t2i["r1"], t2i["r5"], t2i["r10"], i2t["r1"], i2t["r5"], i2t["r10"], block["mR"]]
        route = [block["route"]] if routed else []
        table.add_row(lang, str(block["queries"]), *(f"{c:.3f}" for c in cells), *route)
    Console().print(table)
    Console().print(f"A = {evaluation.report['A']:.3f}, sum of recalls = {evaluation.rsum:.3f} (pool {pool} images)")
    if evaluation.c2c:
        Console().print("caption→caption R@1: " + ", ".join(f"{k} {v:.3f}" for k, v in evaluation.c2c.items()))


def print_by_source(evaluation: Evaluation) -> None:
    table = Table("lang", "source", "queries", "t2i R@1", "R@5", "R@10", title="text→image by caption source")
    for lang, sources in evaluation.by_source.items():
        for source, block in sources.items():
            t2i = block["t2i"]
            table.add_row(lang, source, str(block["queries"]), *(f"{t2i[k]:.3f}" for k in ("r1", "r5", "r10")))
    Console().print(table)


def lexicon_parts(evaluation: Evaluation, split: Any, samples: Path, settings: Settings) -> dict[str, Any]:
    from indexer.asset_paths import SHIPPED_CONCEPTS
    from training.evaluation.name_lexicon import name_lexicon_report

    assert evaluation.t2i_ranks is not None  # both evaluations keep their ranks
    folder = settings.tagging.lexicon_dir or SHIPPED_CONCEPTS
    return name_lexicon_report(split, evaluation.t2i_ranks, samples, folder)


def print_name_lexicon(report: dict[str, Any]) -> None:
    table = Table(
        "lang", "in lexicon", "R@10", "not in lexicon", "R@10", title=f"text→image R@10 by name ({report['lexicon']})"
    )
    for lang, block in report["languages"].items():
        cells = []
        for part in ("in_lexicon", "not_in_lexicon"):
            r10 = block[part]["r10"]
            cells += [str(block[part]["queries"]), "—" if r10 is None else f"{r10:.3f}"]
        table.add_row(lang, *cells)
    Console().print(table)


def served_settings(settings: Settings, tower: Path | None, encoders: dict[str, str | None]) -> Settings:
    """The settings evaluated: the environment's (what ``polyglot serve`` would serve), or ``tower`` instead of
    its text side, on the image encoder it was trained for. ``encoders``: the text/image encoders the user
    expects the tower to use (``--text-encoder``...), checked."""
    from indexer.tower import TextTower

    if tower is None:
        return settings
    config = TextTower.read_config(tower)
    for name, given in encoders.items():
        expected = config.get(f"{name}_encoder")
        if given and given != expected:
            raise ValueError(f"the tower was trained with {name} encoder {expected!r}, not {given!r}")
    return settings.model_copy(update={"tower_path": tower, "image_encoder": config["image_encoder"]})


def check_clc_options(clc: str, translator: str | None) -> None:
    from indexer.query.consistency import CLC_MODES

    if clc not in CLC_MODES:
        raise fail(f"unknown --clc {clc!r}; choose one of: {', '.join(CLC_MODES)}")
    if translator is not None and translator not in TRANSLATOR_CHOICES:
        raise fail(f"unknown --translator {translator!r}; choose one of: {', '.join(TRANSLATOR_CHOICES)}")


def clc_settings(
    settings: Settings,
    translator: str | None,
    lexicons: Path | None,
    corpus: Path | None,
    classifier: Path | None,
) -> Settings:
    """CLC's translator options as settings (parallel is no setting: it is built from the evaluated split)."""
    update: dict[str, Any] = {}
    if translator is not None:
        update["clc_translator"] = None if translator == "parallel" else translator
    if translator == "gloss" and lexicons is not None:
        update["clc_lexicons_dir"] = lexicons
    if corpus is not None:
        update["clc_corpus"] = corpus
    if classifier is not None:
        update["clc_classifier"] = classifier
    return settings.model_copy(update=update)


def check_corpus(settings: Settings, split: Any) -> None:
    """A retrieval corpus holding the evaluated photos' captions would "translate" a query into its own photo's
    parallel caption: refuse it (m30k-text shares no photo with m30k-f8k)."""
    from indexer.caption_records import iter_captions
    from training.translation.retrieval import corpus_file

    if settings.query.clc_translator != "retrieval" or settings.query.clc_corpus is None:
        return
    pool = set(split.images)
    shared = next((c.image for c in iter_captions(corpus_file(settings.query.clc_corpus)) if c.image in pool), None)
    if shared is not None:
        raise ValueError(f"the translation corpus has captions of evaluated photos (e.g. {shared}): use another")


TRANSLATOR_CHOICES = ("gloss", "retrieval", "mt", "parallel")


def register(cli: typer.Typer) -> None:
    @cli.command("evaluate")
    def evaluate_command(
        data: Path = typer.Option(..., help="Data set folder (images/, captions.jsonl, splits/*.txt)."),
        split: str = typer.Option("dev", help="Split to evaluate on (its images are the pool)."),
        tower: Path | None = typer.Option(
            None,
            help="Evaluate this text side instead of the served one: a student folder or a research tower (e.g. "
            "training/assets/tower, with its language bridge).",
        ),
        extra_captions: list[Path] = typer.Option(
            [], help="More caption files of the same schema (repeatable), e.g. ../shared/data/more-langs/*.jsonl."
        ),
        baseline: str | None = typer.Option(None, help="Evaluate a zero-training baseline instead: label-bridge."),
        imagenet_labels: Path | None = typer.Option(
            None,
            help="The wide-domain dev set: --data is ../shared/data/imagenet-samples and this the class names "
            "(../shared/data/imagenet-labels); each name, per language, is a query with one right photo of 700.",
        ),
        query_case: str | None = typer.Option(
            None,
            help="With --imagenet-labels: every query typed lower, capitalised or upper instead of as written "
            '(measures names typed "Panda" or "PANDA").',
        ),
        name_lexicon: bool = typer.Option(
            False,
            "--name-lexicon",
            help="With --imagenet-labels: also text→image recalls per language in two parts, class names that are a "
            "name of their own concept in the concept lexicon (POLYGLOT_TAG_LEXICON_DIR, default the shipped one) "
            "and names that are not; printed, and in --json under name_lexicon.",
        ),
        text_encoder: str | None = typer.Option(None, help="Text encoder for the baseline (default: settings)."),
        image_encoder: str | None = typer.Option(None, help="Image encoder for the baseline (default: settings)."),
        json_out: Path | None = typer.Option(
            None, "--json", help="Write the recalls (and each language's route: the model that answered it)."
        ),
        c2c_json: Path | None = typer.Option(None, help="Write the caption→caption R@1 table here as JSON."),
        no_bridge: bool = typer.Option(False, help="Leave a research tower's language bridge out (to measure it)."),
        by_source: Path | None = typer.Option(
            None, help="Also text→image recalls per language and caption source: printed, and written here as JSON."
        ),
        lexicons: Path | None = typer.Option(
            None, help="Dictionaries of CLC's gloss translator (en-XX.tsv; POLYGLOT_CLC_LEXICONS_DIR)."
        ),
        clc: str = typer.Option(
            "off", help="Cross-lingual consistency of the text→image ranking: off, average (CLC-A), classifier (CLC-C)."
        ),
        translator: str | None = typer.Option(
            None,
            help="CLC's query translator: gloss (--lexicons: its dictionaries), "
            "retrieval (--translation-corpus), mt, or parallel (the split's parallel captions as perfect "
            "translations). Default: POLYGLOT_CLC_TRANSLATOR.",
        ),
        translation_corpus: Path | None = typer.Option(
            None,
            help="Caption collection of the retrieval translator (POLYGLOT_CLC_CORPUS), e.g. ../shared/data/m30k-text.",
        ),
        clc_classifier: Path | None = typer.Option(None, help="CLC-C checkpoint (POLYGLOT_CLC_CLASSIFIER)."),
    ) -> None:
        """Text→image and image→text Recall@1/5/10 per language, as /search serves them, plus caption→caption R@1."""
        from indexer.atomic import atomic_write_json
        from indexer.encoders import build_image_encoder, build_text_encoder
        from indexer.query import QueryCache, QueryPipeline, load_models
        from indexer.query.models import load_clc
        from training.clc.fit import parallel_translator
        from training.data.prepared import prepare_split
        from training.evaluation.evaluate import evaluate_label_bridge
        from training.evaluation.served_eval import evaluate_served

        settings = read_settings()
        if query_case is not None and (imagenet_labels is None or query_case not in CASE_FORMS):
            raise fail(f"--query-case takes {', '.join(CASE_FORMS)}, with --imagenet-labels (the wide dev set)")
        if name_lexicon and imagenet_labels is None:
            raise fail("--name-lexicon splits the wide dev set's class names: add --imagenet-labels")
        samples = data
        if imagenet_labels is not None:
            from training.data.wide_dev import WideDevError, build_wide_dev

            folder = "wide-dev" if query_case is None else f"wide-dev-{query_case}"
            try:
                data = build_wide_dev(data, imagenet_labels, settings.resolved_cache_dir / folder, query_case)
            except WideDevError as exc:
                raise fail(str(exc)) from None
        check_data(data)
        check_clc_options(clc, translator)
        if lexicons is not None and translator != "gloss":
            raise fail(
                "--lexicons are the dictionaries of CLC's gloss translator: add --clc average --translator gloss"
            )
        if baseline not in (None, "label-bridge"):
            raise fail(f"unknown baseline {baseline!r}; the only baseline is label-bridge")
        try:
            cache = settings.resolved_cache_dir
            if baseline:
                image = build_image_encoder(settings, image_encoder)
                text = build_text_encoder(settings, text_encoder)
                prepared = prepare_split(data, split, None, image, text, cache, extra_captions=extra_captions)
                evaluation = evaluate_label_bridge(image, text, prepared, cache)
                title = f"label bridge {text.name} × {image.name} on {split}"
            else:
                encoders = {"text": text_encoder, "image": image_encoder}
                served = served_settings(settings, tower, encoders)
                served = clc_settings(served, translator, lexicons, translation_corpus, clc_classifier)
                models = load_models(served, bridge=not no_bridge, sentence_cache=cache, clc=False)
                prepared = prepare_split(
                    data, split, None, models.image_encoder, None, cache, extra_captions=extra_captions
                )
                if clc != "off":
                    check_corpus(served, prepared)
                    parallel = parallel_translator(prepared) if translator == "parallel" else None
                    load_clc(models, served, parallel, cache, models.load_seconds)
                pipeline = QueryPipeline(models, served, QueryCache(0))  # every caption is a new query
                pipeline.check_clc(clc)  # type: ignore[arg-type]
                evaluation = evaluate_served(pipeline, prepared, served.vector_index, clc=clc)  # type: ignore[arg-type]
                title = f"{'tower ' + str(tower) if tower else 'served ' + models.label} on {split}"
            if name_lexicon:
                evaluation.report["name_lexicon"] = lexicon_parts(evaluation, prepared, samples, settings)
        except USER_ERRORS as exc:  # LexiconError, TranslationError and ModelsError are ValueErrors
            raise fail(str(exc)) from None
        print_evaluation(title, evaluation)
        if name_lexicon:
            print_name_lexicon(evaluation.report["name_lexicon"])
        if json_out:
            atomic_write_json(json_out, evaluation.report)
        if c2c_json:
            atomic_write_json(c2c_json, evaluation.c2c)
        if by_source:
            print_by_source(evaluation)
            atomic_write_json(by_source, evaluation.by_source)
