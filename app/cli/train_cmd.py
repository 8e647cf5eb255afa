"""``polyglot train`` and ``polyglot evaluate``: learn the text tower and measure retrieval on a split."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from indexer.encoders.factory import UnknownEncoderError
from indexer.glosses import GLOSS_WEIGHT
from indexer.indexer_settings import IndexerSettings
from indexer.model_files import ChecksumError, ModelFileMissingError
from training.choices import LOSS_NAMES, SPACES
from training.data import DatasetError

if TYPE_CHECKING:
    from training.evaluate import Evaluation

# torch and the training code are imported inside the commands: `polyglot --help` should not load torch.
console = Console(stderr=True)
USER_ERRORS = (DatasetError, UnknownEncoderError, ModelFileMissingError, ChecksumError, FileNotFoundError, ValueError)


def _fail(message: str) -> typer.Exit:
    console.print(f"[red]error:[/] {message}")
    return typer.Exit(code=2)


def _check_data(data: Path) -> None:
    if not data.is_dir():
        raise _fail(f"data folder {data} does not exist")


def print_evaluation(title: str, evaluation: Evaluation) -> None:
    pool = evaluation.report["pool_images"]
    table = Table(
        "lang",
        "queries",
        "t2i R@1",
        "R@5",
        "R@10",
        "i2t R@1",
        "R@5",
        "R@10",
        "mR",
        title=f"{title} — pool {pool} images",
    )
    for lang, block in evaluation.report["languages"].items():
        t2i, i2t = block["t2i"], block["i2t"]
        cells = [t2i["r1"], t2i["r5"], t2i["r10"], i2t["r1"], i2t["r5"], i2t["r10"], block["mR"]]
        table.add_row(lang, str(block["queries"]), *(f"{c:.3f}" for c in cells))
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


def command_line(ctx: typer.Context) -> str:
    """The command as the user gave it (options not left at their defaults), for the model card."""
    parts = ["polyglot", ctx.info_name or "train"]
    for param in ctx.command.params:
        # Typer vendors its own click, so compare by duck type and enum name, not by class.
        if getattr(param, "param_type_name", "") != "option" or param.name is None:
            continue
        source = ctx.get_parameter_source(param.name)
        if source is None or source.name == "DEFAULT":
            continue
        value = ctx.params[param.name]
        if isinstance(value, bool):
            names = param.opts if value else param.secondary_opts
            parts.append(names[0])
        else:
            parts += [param.opts[0], str(value)]
    return shlex.join(parts)


def register(cli: typer.Typer) -> None:
    @cli.command("train")
    def train_command(
        ctx: typer.Context,
        data: Path = typer.Option(..., help="Data set folder (images/, captions.jsonl, splits/*.txt)."),
        out: Path = typer.Option(..., help="Folder for the trained tower (config.json, model.safetensors, README.md)."),
        split: str = typer.Option("train", help="Split to train on."),
        dev_split: str = typer.Option("dev", help="Split for early stopping and the model card; '' for none."),
        langs: str = typer.Option("en", help="Training languages, comma-separated: en (zero-shot) or en,de,fr,cs,pt."),
        captions_per_lang: int | None = typer.Option(
            None, min=1, help="Use only the first N captions of each image in each language (default: all)."
        ),
        max_images: int | None = typer.Option(
            None, min=2, help="Train on a fixed random subset of N images of the split (default: all)."
        ),
        loss: str = typer.Option("m3l", help=f"Loss: {', '.join(LOSS_NAMES)}."),
        text_encoder: str | None = typer.Option(None, help="Text encoder (default: settings text_encoder)."),
        image_encoder: str | None = typer.Option(None, help="Image encoder (default: settings image_encoder)."),
        space: str = typer.Option("center-l2", help=f"Training space: {', '.join(SPACES)} (raw = the paper's)."),
        image_space_from: Path | None = typer.Option(
            None, help="Reuse this tower's image space (mean) so indexes stay valid."
        ),
        epochs: int = typer.Option(30, min=1, max=1000),
        patience: int = typer.Option(5, min=1, help="Stop after this many epochs without dev improvement."),
        batch_size: int = typer.Option(128, min=2, max=8192),
        lr: float = typer.Option(1e-3, min=1e-7, max=1.0),
        beta1: float = typer.Option(0.99, min=0.0, max=0.9999, help="Adam β1 (the paper's 0.99 by default)."),
        seed: int = typer.Option(0),
        rho: float | None = typer.Option(None, help="M3L exponent ρ (default 4)."),
        alpha1: float | None = typer.Option(None, help="M3L weight of the negative image (default 0.5)."),
        alpha2: float | None = typer.Option(None, help="M3L weight of the negative text (default 1)."),
        bounded: bool | None = typer.Option(
            None, "--bounded/--unbounded", help="M3L ratio form: bounded r/(1+r), or the paper's raw ratio (default)."
        ),
        eta: float | None = typer.Option(None, help="PATR margin η on squared distances (default 2)."),
        margin: float | None = typer.Option(None, help="VSE hinge margin (default 0.2)."),
        temperature: float | None = typer.Option(None, help="InfoNCE temperature τ (default 0.05)."),
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
        threads: int | None = typer.Option(None, min=1, help="torch threads (default: settings torch_threads)."),
        json_out: Path | None = typer.Option(None, "--json", help="Also write the dev recalls here (as evaluate)."),
        c2c_json: Path | None = typer.Option(None, help="Also write the dev caption→caption R@1 table here."),
    ) -> None:
        """Train the text tower on frozen, cached features; save it with a model card."""
        import torch

        from indexer.atomic import atomic_write_json
        from training.train import TrainConfig, parse_langs, train

        settings = IndexerSettings()
        _check_data(data)
        options = {
            "rho": rho,
            "alpha1": alpha1,
            "alpha2": alpha2,
            "bounded": bounded,
            "eta": eta,
            "margin": margin,
            "temperature": temperature,
        }
        allowed = {
            "m3l": {"rho", "alpha1", "alpha2", "bounded"},
            "patr": {"eta"},
            "vse": {"margin"},
            "infonce": {"temperature"},
        }
        if loss not in LOSS_NAMES:
            raise _fail(f"unknown loss {loss!r}; choose one of: {', '.join(LOSS_NAMES)}")
        wrong = [f"--{k}" for k, v in options.items() if v is not None and k not in allowed[loss]]
        if wrong:
            raise _fail(f"{', '.join(wrong)} do not apply to --loss {loss}")
        if threads or settings.torch_threads:
            torch.set_num_threads(threads or settings.torch_threads or 1)
        try:
            config = TrainConfig(
                data=data,
                out=out,
                cache_dir=settings.resolved_cache_dir,
                models_dir=settings.resolved_models_dir,
                langs=parse_langs(langs),
                split=split,
                captions_per_lang=captions_per_lang,
                max_images=max_images,
                dev_split=dev_split or None,
                loss=loss,
                loss_options={k: v for k, v in options.items() if v is not None},
                text_encoder=text_encoder or settings.text_encoder,
                image_encoder=image_encoder or settings.image_encoder,
                space=space,
                image_space_from=image_space_from,
                hidden_dims=[int(w) for w in hidden_dims.split(",") if w.strip()],
                dropouts=[float(p) for p in dropouts.split(",") if p.strip()],
                epochs=epochs,
                patience=patience,
                batch_size=batch_size,
                lr=lr,
                beta1=beta1,
                seed=seed,
                c2c_weight=c2c_weight,
                c2c_temperature=c2c_temperature,
                bridge_from=bridge_from,
                command=command_line(ctx),
            )
            if space not in SPACES:
                raise ValueError(f"unknown training space {space!r}; choose one of: {', '.join(SPACES)}")
            result = train(config)
        except USER_ERRORS as exc:
            raise _fail(str(exc)) from None
        console.print(f"[green]saved[/] {out} (best epoch {result.best_epoch}, {result.seconds:.0f} s)")
        if result.dev is not None:
            print_evaluation(f"{dev_split} after training", result.dev)
            if json_out:
                atomic_write_json(json_out, result.dev.report)
            if c2c_json:
                atomic_write_json(c2c_json, result.dev.c2c)

    @cli.command("evaluate")
    def evaluate_command(
        data: Path = typer.Option(..., help="Data set folder (images/, captions.jsonl, splits/*.txt)."),
        split: str = typer.Option("dev", help="Split to evaluate on (its images are the pool)."),
        tower: Path | None = typer.Option(None, help="Tower folder (default: the shipped tower)."),
        baseline: str | None = typer.Option(None, help="Evaluate a zero-training baseline instead: label-bridge."),
        text_encoder: str | None = typer.Option(None, help="Text encoder for the baseline (default: settings)."),
        image_encoder: str | None = typer.Option(None, help="Image encoder for the baseline (default: settings)."),
        json_out: Path | None = typer.Option(None, "--json", help="Write the recalls here as JSON."),
        c2c_json: Path | None = typer.Option(None, help="Write the caption→caption R@1 table here as JSON."),
        no_bridge: bool = typer.Option(False, help="Leave the tower's language bridge out (to measure it)."),
        by_source: Path | None = typer.Option(
            None,
            help="Also text→image recalls per language and caption source (translations vs independent "
            "captions): printed, and written here as JSON.",
        ),
        ensemble_with: Path | None = typer.Option(
            None,
            help="A second tower in the same image space: average both towers' scores (as the service's "
            "POLYGLOT_FAST_TOWER_USE=ensemble) for the languages its encoder covers.",
        ),
        ensemble_weight: float = typer.Option(0.5, min=0.0, max=1.0, help="The second tower's share of the score."),
        lexicons: Path | None = typer.Option(
            None,
            help="Bilingual dictionaries (en-XX.tsv): score each caption query together with its word-by-word "
            "English gloss, as the service does with POLYGLOT_LEXICONS_DIR.",
        ),
        lexicon_weight: float = typer.Option(GLOSS_WEIGHT, min=0.0, max=1.0, help="The gloss's share of the score."),
    ) -> None:
        """Text→image and image→text Recall@1/5/10 per language on a split, plus caption→caption R@1."""
        from indexer.atomic import atomic_write_json
        from indexer.bridge import LanguageBridge
        from indexer.embedders import shipped_tower_path
        from indexer.encoders import create_image_encoder, create_text_encoder
        from indexer.glosses import LexiconTranslator
        from indexer.tower import TextTower
        from training.evaluate import Glosses, evaluate_ensemble, evaluate_label_bridge, evaluate_tower
        from training.prepared import prepare_split

        settings = IndexerSettings()
        _check_data(data)
        if baseline not in (None, "label-bridge"):
            raise _fail(f"unknown baseline {baseline!r}; the only baseline is label-bridge")
        if lexicons is not None and (baseline or ensemble_with):
            raise _fail("--lexicons applies to one tower: not with --baseline or --ensemble-with")
        try:
            if baseline:
                image = create_image_encoder(image_encoder or settings.image_encoder)
                text = create_text_encoder(text_encoder or settings.text_encoder, settings.resolved_models_dir)
                prepared = prepare_split(data, split, None, image, text, settings.resolved_cache_dir)
                evaluation = evaluate_label_bridge(image, text, prepared, settings.resolved_cache_dir)
                title = f"label bridge {text.name} × {image.name} on {split}"
            else:
                folder = tower or settings.tower_path or shipped_tower_path()
                model = TextTower.from_pretrained(folder)
                for name, given in (("text", text_encoder), ("image", image_encoder)):
                    expected = model.text_encoder if name == "text" else model.image_encoder
                    if given and given != expected:
                        raise ValueError(f"the tower was trained with {name} encoder {expected!r}, not {given!r}")
                image = create_image_encoder(model.image_encoder)
                text = create_text_encoder(model.text_encoder, settings.resolved_models_dir)
                prepared = prepare_split(data, split, None, image, text, settings.resolved_cache_dir)
                bridge = None if no_bridge else LanguageBridge.from_pretrained(folder)
                title = f"tower {tower or 'shipped'}{' with its language bridge' if bridge else ''} on {split}"
                if ensemble_with is None:
                    glosses = None
                    if lexicons is not None:
                        translator = LexiconTranslator.from_folder(lexicons, text.languages)
                        glosses = Glosses(translator, lexicon_weight, text, settings.resolved_cache_dir)
                        title += f", with English glosses (weight {lexicon_weight:.2f})"
                    evaluation = evaluate_tower(model, prepared, bridge=bridge, glosses=glosses)
                else:
                    second = TextTower.from_pretrained(ensemble_with)
                    if second.image_space.fingerprint != model.image_space.fingerprint:
                        raise ValueError(f"{ensemble_with} maps into another image space than {folder}")
                    second_text = create_text_encoder(second.text_encoder, settings.resolved_models_dir)
                    second_split = prepare_split(data, split, None, image, second_text, settings.resolved_cache_dir)
                    evaluation = evaluate_ensemble(
                        model, second, prepared, second_split, ensemble_weight, second_text.supports, bridge
                    )
                    title += f", ensembled with {ensemble_with} (weight {ensemble_weight})"
        except USER_ERRORS as exc:  # LexiconError is a ValueError
            raise _fail(str(exc)) from None
        print_evaluation(title, evaluation)
        if json_out:
            atomic_write_json(json_out, evaluation.report)
        if c2c_json:
            atomic_write_json(c2c_json, evaluation.c2c)
        if by_source:
            print_by_source(evaluation)
            atomic_write_json(by_source, evaluation.by_source)
