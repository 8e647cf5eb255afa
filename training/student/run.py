"""``polyglot train student``: assemble the corpus, the teacher's targets and the held-out check, then train."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.encoders.base import ImageEncoder, TextEncoder
from indexer.encoders.imagenet import imagenet_class_names
from indexer.image_space import ImageSpace
from indexer.tower import TextEmbedder
from training.data.features import text_embeddings
from training.evaluation.retrieval_metrics import t2i_ranks
from training.student.corpus import PhotoCaptions, concepts, photo_captions, translations
from training.student.int8_calibration import calibrate_student, calibration_texts
from training.student.lexicon_names import lexicon_check, lexicon_pairs
from training.student.muse_teacher import blend_targets, class_name_words, muse_rows, soft_concepts
from training.student.name_texts import class_lemmas, held_out_class_languages, name_texts
from training.student.teacher import teacher_vectors
from training.student.train import Inputs, Student, StudentRecipe, embed_texts, train_student
from training.student.words import (
    Embed,
    PseudoNames,
    WordPairs,
    english_vocabulary,
    nearest_source_check,
    pseudo_class_names,
    read_lexicons,
    word_pairs,
)

HOLDOUT_LANGS = ("en", "de", "fr", "cs", "pt", "zh", "ja", "ar")
# The training curve's word-translation check: held-out English words, their translations in these languages.
WORD_CHECK_LANGS = ("de", "zh", "ru", "tr", "ko", "fi")


@dataclass
class StudentData:
    data: Path  # m30k-f8k: train photos and their captions
    text_corpus: Path  # m30k-text: parallel task-1 captions
    extra_photo_captions: list[Path]  # e.g. more-langs/f8k-captions.jsonl
    extra_translations: list[Path]  # e.g. more-langs/text-captions.jsonl
    holdout: float = 0.05
    lexicons: Path | None = None  # MUSE English→X dictionaries: the words term and translated class names
    concept_lexicon: Path | None = None  # the shipped concept lexicon folder: the lexicon term


def holdout_check(held: PhotoCaptions) -> Callable[[Student, Inputs], dict[str, float]]:
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

    def evaluate(model: Student, inputs: Inputs) -> dict[str, float]:
        scores = {}
        for lang, (texts, images) in per_lang.items():
            vectors = embed_texts(model, inputs, texts)
            scores[lang] = float(np.mean(t2i_ranks(vectors, images, held.vectors) < 10))
        return scores

    return evaluate


def word_check(
    held: WordPairs, langs: tuple[str, ...] = WORD_CHECK_LANGS
) -> Callable[[Student, Inputs], dict[str, float]]:
    """Held-out words: how often a translation's nearest held-out English word (by the student's own vectors) is
    the word it translates (R@1), per language."""
    return by_student(nearest_source_check(held, langs, "words"))


def by_student(check: Callable[[Embed], dict[str, float]]) -> Callable[[Student, Inputs], dict[str, float]]:
    """A check that reads texts' vectors, run on the student being trained."""
    return lambda model, inputs: check(lambda texts: embed_texts(model, inputs, texts))


def name_check(
    held: PseudoNames, prototypes: np.ndarray, langs: tuple[str, ...] = WORD_CHECK_LANGS
) -> Callable[[Student, Inputs], dict[str, float]]:
    """Translated names of held-out classes: how often the class nearest to the student's vector (among all
    1,000 prototypes) is the name's own (R@1), per language."""
    rows = {lang: [i for i, code in enumerate(held.lang) if code == lang] for lang in langs}

    def evaluate(model: Student, inputs: Inputs) -> dict[str, float]:
        scores = {}
        for lang, chosen in rows.items():
            if chosen:
                vectors = embed_texts(model, inputs, [held.text[i] for i in chosen])
                nearest = np.argmax(vectors @ prototypes.T, axis=1)
                scores[f"names-{lang}"] = float(np.mean(nearest == held.label[chosen]))
        return scores

    return evaluate


def muse_word_targets(
    words: WordPairs,
    targets: np.ndarray,
    muse: TextEncoder | None,
    prototypes: np.ndarray,
    recipe: StudentRecipe,
    cache_dir: Path,
) -> tuple[WordPairs, np.ndarray, np.ndarray]:
    """The words term's pairs and targets with mUSE's soft-concept reading blended into the targets of the
    class-name words' translations in its languages (:mod:`training.student.muse_teacher`), and those rows. With
    ``recipe.muse_word_share`` 0 the rows keep the word teacher's targets (the ablation's control: the same rows
    drawn as often, taught by the first teacher alone) and mUSE is not read."""
    class_names = imagenet_class_names()
    rows = muse_rows(words, class_name_words(class_names))
    if not recipe.muse_word_share:
        return words, targets, rows
    if muse is None:
        raise ValueError("muse_word_share needs the mUSE encoder")
    translated = text_embeddings(muse, [words.text[i] for i in rows], cache_dir, desc="word teacher (mUSE)")
    names = text_embeddings(muse, class_names, cache_dir, desc="class names")
    soft = soft_concepts(translated, names, prototypes, recipe.muse_temperature)
    blended, blended_targets = blend_targets(words, targets, rows, soft, recipe.muse_word_share)
    return blended, blended_targets, rows


def run_student(
    out: Path,
    recipe: StudentRecipe,
    data: StudentData,
    image_encoder: ImageEncoder,
    space: ImageSpace,
    teacher: TextEmbedder,
    cache_dir: Path,
    stop_after: int | None = None,
    word_teacher: TextEmbedder | None = None,
    muse: TextEncoder | None = None,
) -> Path:
    """``word_teacher``: the text side whose English vectors the words term pulls translations to (the previously
    served student by default: it knows English object names; a fixed teacher, as in Reimers & Gurevych).
    ``muse``: the mUSE sentence encoder, the second word teacher when ``recipe.muse_word_share`` > 0."""
    photos, held = photo_captions(
        data.data, data.extra_photo_captions, image_encoder, space, cache_dir, holdout=data.holdout, seed=recipe.seed
    )
    parallel = translations(data.text_corpus, data.extra_translations)
    # Keyed by the teacher's fingerprint, not its encoder's name: every student shares one encoder name, so a
    # student as the teacher (``--teacher var/students/NAME``) must not reuse another teacher's cached targets.
    targets = teacher_vectors(teacher, parallel.sources, cache_dir, name=f"teacher:{teacher.fingerprint}")
    if not image_encoder.loaded:
        image_encoder.load()
    lemmas = class_lemmas() if recipe.name_texts == "lemmas" else None  # read once: English texts and translations
    names = concepts(image_encoder, lemmas)
    checks = [holdout_check(held)] if held is not None else []
    words = word_targets = pseudo = taught = None
    tables: dict[str, dict[str, list[str]]] | None = None
    if data.lexicons is not None:
        tables = read_lexicons(data.lexicons)  # ~41 files (2.6 s, ~250 MB): read once for every use
        if recipe.words_per_step and word_teacher is not None:
            captions = [data.data / "captions.jsonl", data.text_corpus / "captions.jsonl"]
            vocabulary = english_vocabulary(captions, imagenet_class_names())
            words, held_words = word_pairs(tables, vocabulary, holdout=data.holdout, seed=recipe.seed)
            word_targets = teacher_vectors(
                word_teacher, words.english, cache_dir, name=f"word-teacher:{word_teacher.fingerprint}"
            )
            checks.append(word_check(held_words))
            if recipe.muse_word_share or recipe.muse_words_per_step:
                words, word_targets, taught = muse_word_targets(
                    words, word_targets, muse, names.prototypes, recipe, cache_dir
                )
        if recipe.pseudo_concept_share and lemmas is not None:
            generated = name_texts(tables, lemmas, seed=recipe.seed)
            pseudo, held_names = held_out_class_languages(generated, data.holdout, seed=recipe.seed)
            checks.append(name_check(held_names, names.prototypes))
        elif recipe.pseudo_concept_share:
            pseudo = pseudo_class_names(tables, imagenet_class_names(), seed=recipe.seed)
    lexicon = lexicon_targets = None
    if recipe.lexicon_per_step:
        if data.concept_lexicon is None or word_teacher is None:
            raise ValueError("the lexicon term needs the concept lexicon and a word teacher")
        from indexer.concepts.lexicon import ConceptLexicon

        lexicon, held_lexicon = lexicon_pairs(
            ConceptLexicon.load(data.concept_lexicon), holdout=data.holdout, seed=recipe.seed
        )
        lexicon_targets = teacher_vectors(
            word_teacher, lexicon.english, cache_dir, name=f"lexicon-teacher:{word_teacher.fingerprint}"
        )
        checks.append(by_student(lexicon_check(held_lexicon)))
    int8 = int8_texts(data, tables)  # sampled now, from the tables above; the calibration runs when the run ends

    def evaluate(model: Student, inputs: Inputs) -> dict[str, float]:
        return {key: value for check in checks for key, value in check(model, inputs).items()}

    return train_student(
        out,
        recipe,
        photos,
        parallel,
        targets,
        names,
        image_encoder.name,
        space,
        evaluate=evaluate if checks else None,
        stop_after=stop_after,
        words=words,
        word_teacher=word_targets,
        pseudo_names=pseudo,
        muse_rows=taught,
        lexicon=lexicon,
        lexicon_teacher=lexicon_targets,
        when_saved=lambda folder: calibrate_student(folder, int8),
    )


def int8_texts(data: StudentData, tables: Mapping[str, Mapping[str, Sequence[str]]] | None) -> list[str]:
    """The int8 calibration's training texts: the distillation captions and their translations, the dictionaries'
    words (``tables``, as the run read them) and English class names (training/student/int8_calibration.py)."""
    return calibration_texts([data.text_corpus / "captions.jsonl", *data.extra_translations], tables)
