"""Does a per-language mean shift of the student's trunk output help queries outside English? (issue 33, fifteenth
session: measured and not kept.)

Each language's offset from English in the trunk's output (384-d, before the head) is the mean of
``trunk(translation) − trunk(English word)`` over ``--pairs`` training dictionary pairs (MUSE, the words term's own
pairs: never the wide set's names). A query in that language is shifted by ``−alpha × offset`` (re-normalised)
before the head; the served pipeline then ranks the wide dev set's photos as ``polyglot evaluate`` does::

    POLYGLOT_E5_PRECISION=int8 .venv/bin/python benchmarks/language_shift.py --tower var/students/w12r10 \
        --alphas 0,0.5,1 --json docs/results/student/language-shift-w12r10.json

Prints the wide dev R@10 per language for each ``alpha`` (0 = what ``/search`` serves).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.cli.settings_cli import read_settings
from indexer.atomic import atomic_write_json
from indexer.encoders.imagenet import imagenet_class_names
from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.student import is_student_folder
from indexer.tower import TextEmbedder
from indexer.unit import unit_rows
from training.cli.evaluate_cmd import served_settings
from training.data.prepared import prepare_split
from training.data.wide_dev import build_wide_dev
from training.evaluation.served_eval import evaluate_served
from training.student.words import english_vocabulary, read_lexicons, word_pairs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


class LanguageShift:
    """A text side's bridge hook: each row whose language has an offset moves by ``−alpha × offset``."""

    def __init__(self, offsets: dict[str, np.ndarray], alpha: float) -> None:
        self.offsets, self.alpha = offsets, alpha
        # The text side's fingerprint hashes a bridge's weight: one per (languages, alpha).
        self.weight = np.frombuffer(json.dumps([sorted(offsets), alpha]).encode(), dtype=np.uint8)

    def apply(self, sentences: np.ndarray, langs: str | Sequence[str | None] | None) -> np.ndarray:
        per_row = [langs] * len(sentences) if langs is None or isinstance(langs, str) else list(langs)
        out = np.array(sentences, dtype=np.float32, copy=True)
        for row, lang in enumerate(per_row):
            offset = self.offsets.get(lang) if lang is not None else None
            if offset is not None:
                out[row] -= self.alpha * offset
        return unit_rows(out)


def language_offsets(text: TextEmbedder, pairs_per_language: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Mean trunk offset of each dictionary language from English, over training pairs only."""
    tables = read_lexicons(DATA / "lexicons")
    captions = [DATA / "m30k-f8k" / "captions.jsonl", DATA / "m30k-text" / "captions.jsonl"]
    train, _held = word_pairs(tables, english_vocabulary(captions, imagenet_class_names()), holdout=0.05, seed=seed)
    rows_by_lang: dict[str, list[int]] = {}
    for row, lang in enumerate(train.lang):
        if lang != "en":
            rows_by_lang.setdefault(lang, []).append(row)
    rng = random.Random(seed)
    offsets = {}
    for lang, rows in sorted(rows_by_lang.items()):
        chosen = rng.sample(rows, min(pairs_per_language, len(rows)))
        translated = text.encoder.predict([train.text[row] for row in chosen])
        english = text.encoder.predict([train.english[train.source[row]] for row in chosen])
        offsets[lang] = (translated - english).mean(axis=0)
    return offsets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tower", type=Path, required=True, help="a student folder")
    parser.add_argument("--alphas", default="0,0.5,1")
    parser.add_argument("--pairs", type=int, default=600, help="training dictionary pairs a language")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not is_student_folder(args.tower):
        raise SystemExit(f"{args.tower} is not a student folder")
    settings = read_settings()
    served = served_settings(settings, args.tower, {"text": None, "image": None})
    cache = settings.resolved_cache_dir
    models = load_models(served, sentence_cache=cache, clc=False)
    assert isinstance(models.text, TextEmbedder)  # a student's text side is one
    models.text.load()
    offsets = language_offsets(models.text, args.pairs)
    wide = build_wide_dev(DATA / "imagenet-samples", DATA / "imagenet-labels", cache / "wide-dev", None)
    prepared = prepare_split(wide, "dev", None, models.image_encoder, None, cache)
    report: dict[str, dict[str, float]] = {}
    for alpha in (float(a) for a in args.alphas.split(",")):
        models.text.bridge = LanguageShift(offsets, alpha)  # type: ignore[assignment]
        evaluation = evaluate_served(QueryPipeline(models, served, QueryCache(0)), prepared, served.vector_index)
        recalls = {lang: block["t2i"]["r10"] for lang, block in evaluation.report["languages"].items()}
        others = [value for lang, value in recalls.items() if lang != "en"]
        report[str(alpha)] = {**recalls, "mean_non_english": float(np.mean(others))}
        print(
            f"alpha {alpha}: mean of {len(others)} {np.mean(others):.4f}; "
            + ", ".join(f"{lang} {value:.3f}" for lang, value in sorted(recalls.items()))
        )
    if args.json:
        atomic_write_json(args.json, {"tower": str(args.tower), "pairs": args.pairs, "r10": report})


if __name__ == "__main__":
    main()
