"""The student's int8 calibration: the largest input of each of its Linears over training texts, GPTQ's rounding of
its int8 weights (:mod:`training.student.int8_rounding`) and the few Linears its int8 graph keeps in fp32
(:mod:`training.student.int8_sensitivity`), kept in its delta file
(``polyglot models calibrate-student``; ``polyglot train student`` runs it when a run ends).

The texts are the training side's only: captions of ``m30k-text`` (en, de, fr, cs) and their translations in
``more-langs`` (es, zh, uk, ar), the MUSE dictionaries' words in every language and the English class names, the
texts the served student meets (scenes and names of things). The dev sets (Flickr dev captions, the non-English
ImageNet names) measure what int8 costs, so they never shape it. A seeded sample: the same data gives the same
ranges. ``scale`` multiplies each of the three sample sizes (``polyglot models calibrate-student --scale``); it is
chosen on held-apart training texts (``benchmarks/student_int8.py --scales``), never on a dev set.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from indexer.encoders.e5 import E5Tokenizer, E5Weights
from indexer.encoders.imagenet import imagenet_class_names
from indexer.export.e5_int8 import input_absmax
from indexer.student.model import load_trunk, write_int8_ranges
from training.student.int8_rounding import input_grams, rounding_corrections
from training.student.int8_sensitivity import FP32_SHARE, fp32_choice, linear_macs, linear_sensitivity

CAPTIONS_PER_LANGUAGE = 48
WORDS_PER_LANGUAGE = 24
CLASS_NAMES = 48
# ×4 left the mean cosine to fp32 level (0.99932 against 0.99934; benchmarks/student_int8-calibration-size.md).
SCALE = 1
# How the int8 weights are rounded: to the nearest level (ONNX Runtime's own), or by GPTQ on the calibration texts.
ROUNDINGS = ("nearest", "gptq")


class CalibrationDataError(ValueError):
    """A calibration source is missing or empty."""


def calibration_texts(
    caption_files: Sequence[Path],
    word_tables: Mapping[str, Mapping[str, Sequence[str]]] | None,
    *,
    captions_per_language: int = CAPTIONS_PER_LANGUAGE,
    words_per_language: int = WORDS_PER_LANGUAGE,
    class_names: int = CLASS_NAMES,
    scale: int = SCALE,
    seed: int = 0,
) -> list[str]:
    """A seeded sample of training texts: ``captions_per_language`` captions of each language of the JSON-lines
    ``caption_files`` (rows with ``lang`` and ``text``), ``words_per_language`` translations of each MUSE dictionary
    of ``word_tables`` (:func:`~training.student.words.read_lexicons`: the words the words term trains on, identity
    pairs and noise dropped, Chinese also in simplified characters; a training run passes the tables it read), and
    ``class_names`` English ImageNet names; each count times ``scale``."""
    if scale < 1:
        raise ValueError(f"scale must be at least 1, not {scale}")
    captions_per_language, words_per_language, class_names = (
        count * scale for count in (captions_per_language, words_per_language, class_names)
    )
    rng = random.Random(seed)
    by_language: dict[str, list[str]] = {}
    for path in caption_files:
        if not Path(path).is_file():
            raise CalibrationDataError(f"{path} is missing")
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                by_language.setdefault(str(row["lang"]), []).append(str(row["text"]))
    if not by_language:
        raise CalibrationDataError("no captions in the calibration files")
    texts: list[str] = []
    for language in sorted(by_language):
        captions = by_language[language]
        texts += rng.sample(captions, min(captions_per_language, len(captions)))
    if word_tables is not None:
        for table in word_tables.values():
            translations = sorted({form for forms in table.values() for form in forms})
            texts += rng.sample(translations, min(words_per_language, len(translations)))
    names = list(imagenet_class_names())
    texts += rng.sample(names, min(class_names, len(names)))
    return texts


def text_inputs(texts: Sequence[str], weights: E5Weights) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Each text as the served encoder feeds it (query prefix, ``<s> … </s>``), one at a time: no padding."""
    tokenizer = E5Tokenizer(weights)
    rows, _owners, _weights = tokenizer.windows(texts)
    for row in rows:
        yield torch.from_numpy(weights.word_embeddings(np.array([row]))), torch.ones(1, len(row))


def padded_batches(
    inputs: Sequence[tuple[torch.Tensor, torch.Tensor]], size: int = 64
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Single texts of :func:`text_inputs` as (embeddings (B, T, H), mask (B, T)) batches, zero-padded; texts of
    similar length share a batch (sorted), so little is padding."""
    ordered = sorted(inputs, key=lambda pair: pair[0].shape[1])
    batches = []
    for start in range(0, len(ordered), size):
        chunk = ordered[start : start + size]
        length = max(embeddings.shape[1] for embeddings, _mask in chunk)
        embeddings = torch.zeros(len(chunk), length, chunk[0][0].shape[2])
        mask = torch.zeros(len(chunk), length)
        for row, (text_embeddings, _mask) in enumerate(chunk):
            embeddings[row, : text_embeddings.shape[1]] = text_embeddings[0]
            mask[row, : text_embeddings.shape[1]] = 1.0
        batches.append((embeddings, mask))
    return batches


def calibrate_student(
    folder: Path,
    texts: Sequence[str],
    weights: E5Weights | None = None,
    fp32_share: float = FP32_SHARE,
    rounding: str = "gptq",
) -> int:
    """Measure the student's Linear inputs over ``texts``; with ``rounding="gptq"`` choose its int8 weights' levels
    on them; then measure each Linear's int8 error (as rounded) and keep the ranges, the level corrections and the
    Linears to run in fp32 (``fp32_share`` of the multiplies at most) in its delta file; returns the rows run."""
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDINGS)}, not {rounding!r}")
    weights = weights or E5Weights()
    trunk = load_trunk(folder, weights)
    inputs = list(text_inputs(texts, weights))
    ranges = input_absmax(trunk, tqdm(inputs, desc="int8 calibration", unit="text", leave=False))
    batches = padded_batches(inputs)
    corrections = rounding_corrections(trunk, ranges, input_grams(trunk, batches)) if rounding == "gptq" else {}
    keep_fp32: dict[str, float] = {}
    if fp32_share > 0:
        sensitivity = linear_sensitivity(trunk, ranges, batches, rounding=corrections)
        keep_fp32 = fp32_choice(sensitivity, linear_macs(trunk), fp32_share)
    kept_int8 = {name: levels for name, levels in corrections.items() if name not in keep_fp32}
    write_int8_ranges(folder, ranges, keep_fp32, kept_int8)
    return len(inputs)
