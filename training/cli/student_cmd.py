"""``polyglot train student`` (also spelt ``polyglot train-student``): train (or resume) the student text encoder,
the served model (training/student/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from app.cli.common import USER_ERRORS, fail
from app.cli.settings_cli import read_settings
from training.cli import train_options as shared

SHARED = Path("../shared/data")


def register(train_app: typer.Typer, cli: typer.Typer) -> None:
    @train_app.command("student")
    @shared.with_options(shared.schedule("steps", "warmup", "seed", warmup=100))
    def train_student_command(
        out: Path = typer.Option(..., help="Student folder; a checkpoint.pt there is resumed."),
        data: Path = typer.Option(SHARED / "m30k-f8k", help="Photos with captions (its train split is used)."),
        text_corpus: Path = typer.Option(SHARED / "m30k-text", help="Parallel task-1 captions (distillation)."),
        photo_captions: list[Path] = typer.Option(
            [SHARED / "more-langs" / "f8k-captions.jsonl"], help="More captions of --data's photos (repeatable)."
        ),
        translations: list[Path] = typer.Option(
            [SHARED / "more-langs" / "text-captions.jsonl"],
            help="More translations of --text-corpus's task-1 captions (repeatable).",
        ),
        teacher: Path | None = typer.Option(None, help="Teacher tower folder (default: training/assets/tower)."),
        lexicons: Path | None = typer.Option(
            SHARED / "lexicons",
            help="MUSE English→X dictionaries (en-XX.tsv): the words term and translated class names. "
            "Pass an empty folder name ('') to train without them.",
        ),
        word_teacher: Path | None = typer.Option(
            None, help="Text side whose English vectors the words term targets (default: the shipped student)."
        ),
        words_per_step: int = typer.Option(96, min=0, help="Dictionary words per step (0: no words term)."),
        lexicon_per_step: int = typer.Option(
            0, min=0, help="Concept-lexicon names per step, any language (0: no lexicon term)."
        ),
        concept_lexicon: Path | None = typer.Option(
            None, help="Concept lexicon folder for the lexicon term (default: the shipped one)."
        ),
        weight_lexicon: float = typer.Option(1.0, min=0.0, help="Weight of the lexicon term."),
        muse_word_share: float = typer.Option(
            0.0,
            min=0.0,
            max=1.0,
            help="mUSE as a second word teacher: the share of its soft-concept reading in the target of a "
            "class-name word's translation in its 15 languages (0: the word teacher alone).",
        ),
        muse_words_per_step: int = typer.Option(
            0,
            min=0,
            help="Class-name words' translations in mUSE's languages drawn this many more per step (taught by "
            "mUSE with --muse-word-share, else by the word teacher alone).",
        ),
        pseudo_concept_share: float = typer.Option(
            0.5, min=0.0, max=1.0, help="Share of the step's class names given as word-by-word translations."
        ),
        name_texts: str = typer.Option(
            "word-by-word",
            help="Translated class names: 'word-by-word' (one English name a class) or 'lemmas' (every English "
            "name, word orders, compounds; in each language 5 % of its classes held out for the names-XX check).",
        ),
        case_forms: bool = typer.Option(True, help="Draw words and class names lower-case, Capitalised or UPPER."),
        layers: int = typer.Option(4, min=1, max=12, help="e5-small layers the student keeps."),
        frozen_layers: int = typer.Option(0, min=0, max=11, help="Lower layers left as pretrained (no gradient)."),
        photos_per_step: int = typer.Option(64, min=2, help="Image–caption pairs per step (distinct photos)."),
        translations_per_step: int = typer.Option(48, min=1, help="Translation pairs per step."),
        concepts_per_step: int = typer.Option(32, min=1, help="Class names per step."),
        keep_per_step: int = typer.Option(24, min=1, help="Texts per step anchored to the frozen e5."),
        trunk_lr: float = typer.Option(5e-5, min=0.0, help="Peak learning rate of the transformer layers."),
        head_lr: float = typer.Option(1e-3, min=0.0, help="Peak learning rate of the head."),
        weight_photo: float = typer.Option(1.0, min=0.0, help="Weight of the image–caption term."),
        weight_distill: float = typer.Option(1.0, min=0.0, help="Weight of the distillation term."),
        weight_concept: float = typer.Option(0.5, min=0.0, help="Weight of the concept term."),
        weight_keep: float = typer.Option(1.0, min=0.0, help="Weight of the language-keeping term."),
        weight_words: float = typer.Option(1.0, min=0.0, help="Weight of the word-translation term."),
        holdout: float = typer.Option(0.05, min=0.0, max=0.5, help="Share of train photos held out for checks."),
        init: Path | None = typer.Option(
            None, help="Start from this student folder (e.g. indexer/assets/student) to train it further."
        ),
        batch_seed: int | None = typer.Option(
            None,
            help="Seed of the batches, case forms and dropout (default: --seed). A round continued with --init "
            "draws new batches with another value; the held-out splits stay on --seed.",
        ),
        threads: int = typer.Option(2, min=1, help="torch threads."),
        stop_after: int | None = typer.Option(
            None, min=1, help="Stop after N steps of this call (a checkpoint is written); run again to resume."
        ),
        **options: Any,
    ) -> None:
        """Train the served student: e5-small's first layers fine-tuned end to end into the image space.

        Image–caption, distillation, concept (class names in English and translated word by word), word-translation
        and language-keeping terms; resumable (run it again to go on).

        Writes a student folder servable as POLYGLOT_TOWER_PATH."""
        from indexer.asset_paths import SHIPPED_CONCEPTS, SHIPPED_STUDENT
        from indexer.encoders import build_image_encoder, build_text_encoder
        from indexer.query.models import load_text_tower
        from training.asset_paths import research_tower_path
        from training.student.run import StudentData, run_student
        from training.student.train import NAME_TEXTS, StudentRecipe

        settings = read_settings()
        use_lexicons = lexicons is not None and str(lexicons) not in ("", ".")
        if name_texts not in NAME_TEXTS:
            raise fail(f"--name-texts must be one of {', '.join(map(repr, NAME_TEXTS))}, not {name_texts!r}")
        if use_lexicons and not any(Path(str(lexicons)).glob("en-*.tsv")):
            raise fail(f"no en-XX.tsv dictionaries in {lexicons}; pass --lexicons '' to train without them")
        recipe = StudentRecipe(
            layers=layers,
            frozen_layers=frozen_layers,
            photos_per_step=photos_per_step,
            translations_per_step=translations_per_step,
            concepts_per_step=concepts_per_step,
            keep_per_step=keep_per_step,
            words_per_step=words_per_step if use_lexicons else 0,
            lexicon_per_step=lexicon_per_step,
            pseudo_concept_share=pseudo_concept_share if use_lexicons else 0.0,
            name_texts=name_texts,
            case_forms=case_forms,
            muse_word_share=muse_word_share if use_lexicons and words_per_step else 0.0,
            muse_words_per_step=muse_words_per_step if use_lexicons and words_per_step else 0,
            trunk_lr=trunk_lr,
            head_lr=head_lr,
            weights={
                "photo": weight_photo,
                "distill": weight_distill,
                "concept": weight_concept,
                "keep": weight_keep,
                "words": weight_words,
                "lexicon": weight_lexicon,
            },
            init=str(init) if init else None,
            teacher=str(teacher) if teacher else None,
            word_teacher=str(word_teacher) if word_teacher else None,
            threads=threads,
            batch_seed=batch_seed,
            device=settings.models.device,
            **options,  # the schedule: steps, warm-up, seed
        )
        inputs = StudentData(
            data,
            text_corpus,
            list(photo_captions),
            list(translations),
            holdout=holdout,
            lexicons=lexicons if use_lexicons else None,
            concept_lexicon=(concept_lexicon or SHIPPED_CONCEPTS) if lexicon_per_step else None,
        )
        try:
            teacher_model = load_text_tower(  # the previous served model, not the student being replaced
                settings, teacher or research_tower_path(), sentence_cache=settings.resolved_cache_dir
            )
            image_encoder = build_image_encoder(settings)
            words_teacher = muse = None
            if (use_lexicons and words_per_step) or lexicon_per_step:
                words_teacher = load_text_tower(
                    settings, word_teacher or SHIPPED_STUDENT, sentence_cache=settings.resolved_cache_dir
                )
            if recipe.muse_word_share:
                muse = build_text_encoder(settings, "muse")
            run_student(
                out,
                recipe,
                inputs,
                image_encoder,
                teacher_model.tower.image_space,
                teacher_model,
                settings.resolved_cache_dir,
                stop_after=stop_after,
                word_teacher=words_teacher,
                muse=muse,
            )
        except USER_ERRORS as exc:
            raise fail(str(exc)) from None

    cli.command("train-student", hidden=True)(train_student_command)  # the old spelling
