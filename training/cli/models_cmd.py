"""``polyglot models calibrate|calibrate-student|average-students``: the lab's part of ``polyglot models``, which
makes the shipped int8 calibrations and students from training data (then ``polyglot models build``, the
product's, exports them). Added to the ``models`` group by :mod:`training.cli`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from app.cli.common import console, fail

app = typer.Typer()


@app.command("calibrate")
def calibrate(
    data: Path = typer.Option(..., help="Data set folder with images/ and splits/ (../shared/data/m30k-f8k)."),
    split: str = typer.Option("train", help="Split whose first photos are measured (never a dev split)."),
    images: int = typer.Option(128, min=8, max=4096, help="Photos measured."),
    out: Path | None = typer.Option(None, help="Where to write the ranges (default: the shipped asset)."),
) -> None:
    """Measure the int8 image CNN's activation ranges on training photos (then `polyglot models build`)."""
    from training.data.calibration import CalibrationError, calibrate_image_ranges

    try:
        target = calibrate_image_ranges(data, split=split, images=images, out=out)
    except CalibrationError as exc:
        raise fail(str(exc)) from None
    console.print(f"[green]ok[/] ranges of {images} {split} photos: {target}; now run `polyglot models build`")


@app.command("calibrate-student")
def calibrate_student_command(
    student: Path = typer.Option(
        Path("indexer/assets/student"), help="Student folder whose delta file gets the int8 calibration."
    ),
    captions: list[Path] = typer.Option(
        [Path("../shared/data/m30k-text/captions.jsonl"), Path("../shared/data/more-langs/text-captions.jsonl")],
        help="Training captions (JSON lines with lang and text; repeatable). Never a dev set.",
    ),
    lexicons: Path | None = typer.Option(
        Path("../shared/data/lexicons"),
        help="MUSE dictionaries (en-XX.tsv) whose words are measured too ('' for none).",
    ),
    scale: int | None = typer.Option(
        None,
        min=1,
        max=16,
        help="Times the sample's texts per source (default: the one benchmarks/student_int8.py chose).",
    ),
    fp32_share: float | None = typer.Option(
        None,
        min=0.0,
        max=0.5,
        help="Share of the multiplies the int8 graph may keep in fp32, most int8-sensitive Linears first "
        "(default: the one benchmarks/student_int8.py chose; 0: every Linear int8).",
    ),
    rounding: str = typer.Option(
        "gptq",
        help="How the int8 weights are rounded: 'gptq' (levels chosen on the calibration texts) or 'nearest'.",
    ),
) -> None:
    """Measure the student's int8 calibration on training texts (then `polyglot models build`)."""
    from indexer.student.model import is_student_folder, load_int8_fp32, load_int8_rounding
    from training.student.int8_calibration import (
        ROUNDINGS,
        SCALE,
        CalibrationDataError,
        calibrate_student,
        calibration_texts,
    )
    from training.student.int8_sensitivity import FP32_SHARE
    from training.student.words import read_lexicons

    if rounding not in ROUNDINGS:
        raise fail(f"--rounding must be one of {', '.join(ROUNDINGS)}, not {rounding!r}")
    if not is_student_folder(student):
        raise fail(f"{student} is not a student folder (config.json of kind e5-student)")
    if lexicons is not None and str(lexicons) in ("", "."):
        lexicons = None  # --lexicons '': captions and class names only
    if lexicons is not None and not any(lexicons.glob("en-*.tsv")):
        raise fail(f"no en-XX.tsv dictionaries in {lexicons}")
    try:
        texts = calibration_texts(
            captions, read_lexicons(lexicons) if lexicons is not None else None, scale=scale or SCALE
        )
    except CalibrationDataError as exc:
        raise fail(str(exc)) from None
    share = FP32_SHARE if fp32_share is None else fp32_share
    rows = calibrate_student(student, texts, fp32_share=share, rounding=rounding)
    kept = load_int8_fp32(student)
    gptq = len(load_int8_rounding(student))
    console.print(
        f"[green]ok[/] int8 calibration of {rows} training texts kept in {student}"
        f" ({len(kept)} Linears stay fp32{': ' + ', '.join(kept) if kept else ''};"
        f" {gptq} rounded by GPTQ);"
        " now run `polyglot models build`"
    )


@app.command("average-students")
def average_students_command(
    students: list[Path] = typer.Argument(..., help="Two or more student folders of the same depth and head."),
    out: Path = typer.Option(..., help="New folder for the averaged student."),
) -> None:
    """Average students' weights into a new student (then calibrate-student and models build)."""
    from training.student.average import AverageError, average_students

    try:
        average_students(students, out)
    except AverageError as exc:
        raise fail(str(exc)) from None
    console.print(
        f"[green]ok[/] the mean of {len(students)} students in {out}; now run "
        f"`polyglot models calibrate-student --student {out}` for its int8 graph"
    )
