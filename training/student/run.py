"""``polyglot train student``: assemble the corpus, the teacher's targets and the held-out check, then train."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.encoders.base import ImageEncoder
from indexer.image_space import ImageSpace
from indexer.tower import TextEmbedder
from training.evaluation.retrieval_metrics import t2i_ranks
from training.student.corpus import PhotoCaptions, concepts, photo_captions, translations
from training.student.teacher import teacher_vectors
from training.student.train import Batcher, Student, StudentRecipe, embed_texts, train_student

HOLDOUT_LANGS = ("en", "de", "fr", "cs", "pt", "zh", "ja", "ar")


@dataclass
class StudentData:
    data: Path  # m30k-f8k: train photos and their captions
    text_corpus: Path  # m30k-text: parallel task-1 captions
    extra_photo_captions: list[Path]  # e.g. more-langs/f8k-captions.jsonl
    extra_translations: list[Path]  # e.g. more-langs/text-captions.jsonl
    holdout: float = 0.05


def holdout_check(held: PhotoCaptions) -> Callable[[Student, Batcher], dict[str, float]]:
    """Text→image R@10 per language on the held-out train photos (their first caption in each language)."""
    per_lang: dict[str, tuple[list[str], np.ndarray]] = {}
    for lang in HOLDOUT_LANGS:
        seen: set[int] = set()
        texts, images = [], []
        for text, image, code in zip(held.caption_text, held.caption_image.tolist(), held.caption_lang, strict=True):
            if code == lang and image not in seen:
                seen.add(image)
                texts.append(text)
                images.append(image)
        if texts:
            per_lang[lang] = (texts, np.array(images))

    def evaluate(model: Student, batcher: Batcher) -> dict[str, float]:
        scores = {}
        for lang, (texts, images) in per_lang.items():
            vectors = embed_texts(model, batcher, texts)
            scores[lang] = float(np.mean(t2i_ranks(vectors, images, held.vectors) < 10))
        return scores

    return evaluate


def run_student(
    out: Path,
    recipe: StudentRecipe,
    data: StudentData,
    image_encoder: ImageEncoder,
    space: ImageSpace,
    teacher: TextEmbedder,
    cache_dir: Path,
    stop_after: int | None = None,
) -> Path:
    photos, held = photo_captions(
        data.data, data.extra_photo_captions, image_encoder, space, cache_dir, holdout=data.holdout, seed=recipe.seed
    )
    parallel = translations(data.text_corpus, data.extra_translations)
    targets = teacher_vectors(teacher, parallel.sources, cache_dir, name=f"teacher:{teacher.encoder.name}")
    if not image_encoder.loaded:
        image_encoder.load()
    names = concepts(image_encoder)
    evaluate = holdout_check(held) if held is not None else None
    return train_student(
        out,
        recipe,
        photos,
        parallel,
        targets,
        names,
        image_encoder.name,
        space,
        evaluate=evaluate,
        stop_after=stop_after,
    )
