"""``polyglot train tower``: the research MLP tower over a frozen sentence encoder (:mod:`training.tower`), with
distillation on text-only corpora and training on disjoint collections as options."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.common import USER_ERRORS, check_data, console, fail
from app.cli.settings_cli import read_settings
from training.cli import train_options as shared
from training.cli.evaluate_cmd import print_evaluation
from training.losses import TOWER_LOSSES, LossOption, check_loss_options, loss_options
from training.tower.space import SPACES

if TYPE_CHECKING:
    from training.tower.distill import DistillOptions

LOSS_NAMES: tuple[str, ...] = tuple(TOWER_LOSSES)  # what --loss lists: the losses that declare themselves


def loss_parameter(option: LossOption) -> inspect.Parameter:
    """The command-line option of a loss keyword; None (not given) leaves the loss its own default."""
    shown = option.flags.split("/")[int(not option.default)].lstrip("-") if option.flags else f"{option.default:g}"
    return inspect.Parameter(
        option.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=typer.Option(None, *([option.flags] if option.flags else []), help=f"{option.help} (default {shown})."),
        annotation=bool | None if isinstance(option.default, bool) else float | None,
    )


def distill_options(
    corpus: list[Path], sources: str | None, langs: str | None, **options: Any
) -> DistillOptions | None:
    """The distillation of ``--text-corpus`` (training/tower/distill.py), or None without a corpus."""
    from training.tower.distill import DistillOptions
    from training.tower.train import parse_langs

    if not corpus:
        return None
    return DistillOptions(
        corpus=list(corpus),
        sources=parse_langs(sources) if sources else None,
        langs=parse_langs(langs) if langs else None,
        **options,
    )


def register(train_app: typer.Typer) -> None:
    @train_app.command("tower")
    @shared.with_options(
        shared.schedule("epochs", "patience", "batch_size", "lr", "beta1", "seed"),
        [loss_parameter(option) for option in loss_options().values()],
    )
    def tower_command(
        ctx: typer.Context,
        data: list[Path] = shared.DATA,
        out: Path = shared.OUT,
        split: str = shared.SPLIT,
        dev_split: str = typer.Option("dev", help="Split for early stopping and the model card; '' for none."),
        langs: str = shared.LANGS,
        captions_per_lang: int | None = shared.CAPTIONS_PER_LANG,
        max_images: int | None = shared.MAX_IMAGES,
        loss: str = typer.Option("m3l", help=f"Loss: {', '.join(LOSS_NAMES)}."),
        text_encoder: str | None = shared.TEXT_ENCODER,
        image_encoder: str | None = shared.IMAGE_ENCODER,
        space: str = typer.Option("center-l2", help=f"Training space: {', '.join(SPACES)} (raw = the paper's)."),
        image_space_from: Path | None = shared.IMAGE_SPACE_FROM,
        c2c_weight: float = typer.Option(
            0.0,
            min=0.0,
            max=100.0,
            help="Weight of the caption–caption loss between two captions of an image in different languages "
            "(Kádár et al.'s c2c); 0 = off.",
        ),
        c2c_temperature: float = typer.Option(0.05, min=1e-4, max=10.0, help="Temperature of the c2c loss."),
        bridge_from: Path | None = typer.Option(
            None,
            help="A folder with a language bridge (`polyglot bridge`): train on bridged captions of its languages "
            "and ship the bridge with the tower.",
        ),
        hidden_dims: str = typer.Option("1024,2048", help="Hidden widths of the tower, comma-separated."),
        dropouts: str = typer.Option("0.2,0.1,0.0", help="Dropout per block (hidden blocks + last)."),
        threads: int | None = shared.THREADS,
        json_out: Path | None = shared.JSON_OUT,
        c2c_json: Path | None = typer.Option(None, help="Also write the dev caption→caption R@1 table here."),
        text_corpus: list[Path] = typer.Option(
            [],
            help="Text-only caption corpora (folder with captions.jsonl, or .jsonl files; repeatable) whose "
            "non-English captions are distilled towards their English teacher (training/tower/distill.py).",
        ),
        distill: str = typer.Option("self", help="Teacher: self (the tower being trained) or a tower folder."),
        distill_weight: float = typer.Option(1.0, min=0.0, max=100.0, help="Weight of the distillation loss."),
        distill_target: str = typer.Option(
            "caption", help="caption: translations learn from their original; photo: from all English captions."
        ),
        distill_loss: str = typer.Option("mse", help="mse (Reimers & Gurevych) or infonce."),
        distill_sources: str | None = typer.Option(None, help="Keep only these corpus sources, comma-separated."),
        distill_langs: str | None = typer.Option(None, help="Student languages, comma-separated (default: all)."),
        corpus_per_group: int | None = typer.Option(
            2, min=1, help="Corpus captions kept per (photo, language, source), first in file order."
        ),
        distill_batch: int = typer.Option(128, min=2, max=8192, help="Student captions per training step."),
        concept_weight: float = typer.Option(
            0.0,
            min=0.0,
            max=100.0,
            help="Weight of the concept term: the image encoder's English class names (ImageNet's) → its class "
            "prototypes (training/tower/concept_set.py; the student's recipe uses 0.5); 0 = off.",
        ),
        extra_captions: list[Path] = typer.Option(
            [], help="More caption files of the data set's photos (repeatable), e.g. more-langs/f8k-captions.jsonl."
        ),
        disjoint: bool = typer.Option(
            False,
            help="Train on every --data collection (they need not share photos), alternating collections and "
            "tasks (training/tower/disjoint.py); defaults then: --loss vse, --dev-split heldout, all languages. "
            "Pseudo-pair collections (`polyglot pseudopairs make`) are --data collections like any other.",
        ),
        c2c_prob: float = typer.Option(
            0.5, min=0.0, max=1.0, help="--disjoint: probability of the caption–caption task where pairs exist."
        ),
        init_from: Path | None = typer.Option(None, help="--disjoint: fine-tune this tower instead of a new one."),
        **options: Any,
    ) -> None:
        """Train the research MLP tower on cached features of a frozen sentence encoder."""
        from indexer.atomic import atomic_write_json
        from training.tower.concept_set import ConceptOptions
        from training.tower.train import TrainConfig, parse_langs, train

        settings = read_settings()
        for folder in data:
            check_data(folder)
        if len(data) > 1 and not disjoint:
            raise fail("several --data folders need --disjoint")
        if disjoint:  # the paper's defaults where the user left ours
            left = {p: getattr(ctx.get_parameter_source(p), "name", "") == "DEFAULT" for p in ("loss", "dev_split")}
            loss = "vse" if left["loss"] else loss
            dev_split = "heldout" if left["dev_split"] else dev_split
            langs = "" if getattr(ctx.get_parameter_source("langs"), "name", "") == "DEFAULT" else langs
        schedule = {name: options.pop(name) for name in ("epochs", "patience", "batch_size", "lr", "beta1", "seed")}
        try:
            chosen = check_loss_options(loss, options)  # the rest of **options: the losses' own
        except ValueError as exc:
            raise fail(str(exc)) from None
        shared.set_threads(threads, settings.models.torch_threads)
        try:
            config = TrainConfig(
                data=data[0],
                out=out,
                cache_dir=settings.resolved_cache_dir,
                settings=settings,
                langs=parse_langs(langs) if langs or not disjoint else [],
                split=split,
                captions_per_lang=captions_per_lang,
                max_images=max_images,
                extra_captions=list(extra_captions),
                dev_split=dev_split or None,
                loss=loss,
                loss_options=chosen,
                text_encoder=text_encoder or settings.models.text_encoder,
                image_encoder=image_encoder or settings.models.image_encoder,
                space=space,
                image_space_from=image_space_from,
                hidden_dims=[int(w) for w in hidden_dims.split(",") if w.strip()],
                dropouts=[float(p) for p in dropouts.split(",") if p.strip()],
                c2c_weight=c2c_weight,
                c2c_temperature=c2c_temperature,
                bridge_from=bridge_from,
                distill=distill_options(
                    text_corpus,
                    distill_sources,
                    distill_langs,
                    teacher=distill,
                    weight=distill_weight,
                    target=distill_target,
                    loss=distill_loss,
                    per_group=corpus_per_group,
                    batch_size=distill_batch,
                ),
                concepts=ConceptOptions(weight=concept_weight) if concept_weight > 0 else None,
                command=shared.command_line(ctx),
                **schedule,
            )
            if space not in SPACES:
                raise ValueError(f"unknown training space {space!r}; choose one of: {', '.join(SPACES)}")
            if disjoint:
                from training.tower.disjoint import DisjointOptions, train_disjoint

                result = train_disjoint(config, DisjointOptions(list(data), c2c_prob, init_from))
            else:
                result = train(config)
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None
        console.print(f"[green]saved[/] {out} (best epoch {result.best_epoch}, {result.seconds:.0f} s)")
        if result.dev is not None:
            print_evaluation(f"{dev_split} after training", result.dev)
            if json_out:
                atomic_write_json(json_out, result.dev.report)
            if c2c_json:
                atomic_write_json(c2c_json, result.dev.c2c)
