"""``polyglot train`` and ``polyglot evaluate``: learn the text tower and measure retrieval on a split."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer
from rich.console import Console

from app.cli.align_cmd import ALIGN_METHODS, AlignOptions, run_alignment
from app.cli.evaluate_cmd import USER_ERRORS, check_data, fail, print_evaluation
from app.cli.settings_cli import read_settings
from app.cli.smalr_cmd import SMALR_METHODS, SmalrOptions, run_smalr
from training.choices import LOSS_NAMES, SPACES

# torch and the training code are imported inside the commands: `polyglot --help` should not load torch.
console = Console(stderr=True, soft_wrap=True)  # one line per message, whatever the width


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
        elif isinstance(value, list | tuple):  # a repeatable option: once per value
            for item in value:
                parts += [param.opts[0], str(item)]
        else:
            parts += [param.opts[0], str(value)]
    return shlex.join(parts)


def register(cli: typer.Typer) -> None:
    @cli.command("train")
    def train_command(
        ctx: typer.Context,
        data: list[Path] = typer.Option(
            ..., help="Data set folder (images/, captions.jsonl, splits/*.txt); repeatable with --disjoint."
        ),
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
        method: str = typer.Option(
            "tower",
            help=f"What to train: tower (the text tower), a DPCCA-family alignment of two languages: "
            f"{', '.join(ALIGN_METHODS)} (--langs x,y), or a SMALR tower: {', '.join(SMALR_METHODS)}.",
        ),
        k_specific: int = typer.Option(5000, min=0, help="SMALR/HEM: language-specific words per language (K)."),
        latent_size: int = typer.Option(40000, min=1, help="SMALR/HEM/LA: latent vocabulary size before pruning."),
        word_features: str = typer.Option(
            "encoder:muse",
            help="SMALR: word features, encoder:NAME (the word through a bundled encoder) or "
            "fasttext:DIR (DIR/cc.<lang>.300.vec); PCA to 50-d.",
        ),
        smalr_dims: str = typer.Option(
            "200,256,256", help="SMALR: word embedding, GRU hidden, joint widths (the paper's: 512 words, 512 joint)."
        ),
        pretrain_epochs: int = typer.Option(5, min=0, max=100, help="SMALR: epochs of latent-vocabulary pretraining."),
        mask_rate: float = typer.Option(0.2, min=0.0, max=0.9, help="SMALR: share of words MCLM masks."),
        triplet_top_n: int = typer.Option(
            10, min=1, help="SMALR: most violated negatives per anchor in its triplet losses (paper: 10)."
        ),
        cca_dim: int = typer.Option(128, min=1, help="Alignment methods: dimension L of the shared space."),
        cca_eps: float = typer.Option(1e-3, min=0.0, help="Alignment methods: ε added to covariance diagonals."),
        holdout: float = typer.Option(
            0.1,
            min=0.0,
            max=0.5,
            help="Alignment and SMALR methods: share of the training images held out for selection.",
        ),
        time_constant: float = typer.Option(0.9, min=0.0, max=0.999, help="Deep alignments: covariance ρ (Eq. 12)."),
        activation: str = typer.Option("tanh", help="Deep alignments: tanh, sigmoid or relu."),
        hidden_layers: int = typer.Option(2, min=0, max=8, help="Deep alignments: hidden layers (width = input)."),
        text_corpus: list[Path] = typer.Option(
            [],
            help="Text-only caption corpora (folder with captions.jsonl, or .jsonl files; repeatable) whose "
            "non-English captions are distilled towards their English teacher (training/distill.py).",
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
        extra_captions: list[Path] = typer.Option(
            [], help="More caption files of the data set's photos (repeatable), e.g. more-langs/f8k-captions.jsonl."
        ),
        disjoint: bool = typer.Option(
            False,
            help="Train on every --data collection (they need not share photos), alternating collections and "
            "tasks (training/disjoint.py); defaults then: --loss vse, --dev-split heldout, all languages.",
        ),
        c2c_prob: float = typer.Option(
            0.5, min=0.0, max=1.0, help="--disjoint: probability of the caption–caption task where pairs exist."
        ),
        init_from: Path | None = typer.Option(None, help="--disjoint: fine-tune this tower instead of a new one."),
    ) -> None:
        """Train the text tower on cached features (a DPCCA-family alignment or a SMALR model with --method)."""
        import torch

        from indexer.atomic import atomic_write_json
        from training.distill import DistillOptions
        from training.train import TrainConfig, parse_langs, train

        settings = read_settings()
        for folder in data:
            check_data(folder)
        if len(data) > 1 and not disjoint:
            raise fail("several --data folders need --disjoint")
        if disjoint:  # the paper's defaults where the user left ours
            defaults = {
                p: getattr(ctx.get_parameter_source(p), "name", "") == "DEFAULT" for p in ("loss", "dev_split", "langs")
            }
            loss = "vse" if defaults["loss"] else loss
            dev_split = "heldout" if defaults["dev_split"] else dev_split
            langs = "" if defaults["langs"] else langs
        if method in SMALR_METHODS:
            if disjoint:
                raise fail("--method la|hem|smalr trains on one --data folder (no --disjoint)")
            torch.set_num_threads(threads or settings.models.torch_threads or 1)
            try:
                run_smalr(
                    settings, method, data[0], out, split, parse_langs(langs), image_encoder, image_space_from,
                    SmalrOptions(k_specific, latent_size, word_features, smalr_dims, pretrain_epochs, mask_rate,
                                 triplet_top_n),
                    holdout, max_images, captions_per_lang, epochs, patience, batch_size, lr, seed,
                    command_line(ctx), json_out,
                )  # fmt: skip
            except USER_ERRORS as exc:
                raise fail(str(exc)) from None
            return
        if method != "tower":
            if threads or settings.models.torch_threads:
                torch.set_num_threads(threads or settings.models.torch_threads or 1)
            align_options = AlignOptions(method, cca_dim, cca_eps, holdout, time_constant, activation, hidden_layers)
            run_alignment(
                settings,
                data[0],
                out,
                split,
                dev_split,
                langs,
                text_encoder,
                image_encoder,
                align_options,
                epochs,
                patience,
                batch_size,
                lr,
                seed,
                command_line(ctx),
                c2c_json or json_out,
            )
            return
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
            raise fail(f"unknown loss {loss!r}; choose one of: {', '.join(LOSS_NAMES)}")
        wrong = [f"--{k}" for k, v in options.items() if v is not None and k not in allowed[loss]]
        if wrong:
            raise fail(f"{', '.join(wrong)} do not apply to --loss {loss}")
        if threads or settings.models.torch_threads:
            torch.set_num_threads(threads or settings.models.torch_threads or 1)
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
                loss_options={k: v for k, v in options.items() if v is not None},
                text_encoder=text_encoder or settings.models.text_encoder,
                image_encoder=image_encoder or settings.models.image_encoder,
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
                distill=DistillOptions(
                    corpus=list(text_corpus),
                    teacher=distill,
                    weight=distill_weight,
                    target=distill_target,
                    loss=distill_loss,
                    sources=parse_langs(distill_sources) if distill_sources else None,
                    langs=parse_langs(distill_langs) if distill_langs else None,
                    per_group=corpus_per_group,
                    batch_size=distill_batch,
                )
                if text_corpus
                else None,
                command=command_line(ctx),
            )
            if space not in SPACES:
                raise ValueError(f"unknown training space {space!r}; choose one of: {', '.join(SPACES)}")
            if disjoint:
                from training.disjoint import DisjointOptions, train_disjoint

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
