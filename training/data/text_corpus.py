"""Text-only caption corpora (no photos) grouped by photo: the data of teacher–student distillation.

``../shared/data/m30k-text`` and ``../shared/data/more-langs/text-captions.jsonl`` hold captions of photos that
are not available: Multi30K task-1 captions (one English caption and its human translations, a parallel corpus),
independent task-2 / Framed-Multi30K captions of the same photos, and machine translations (``*-mt`` sources).
Grouped by photo, every non-English caption has a *teacher*: the English caption it translates (same source,
task 1 and MT rows) or, for independent captions, the photo's English captions (same-photo pairs).

``per_group`` caps the captions kept per (photo, language, source), first in file order, so that a run can
subsample the 110K task-2 / Portuguese rows to what is cached (stated in every result that uses it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.caption_records import Caption, iter_captions

PARALLEL_SOURCES = ("multi30k-task1", "multi30k-ext-mt")  # rows that translate the photo's task-1 English caption


def corpus_files(paths: Sequence[Path]) -> list[Path]:
    """Each path is a captions JSONL file, or a folder whose ``captions.jsonl`` (or every ``*.jsonl``) is read."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = [path / "captions.jsonl"] if (path / "captions.jsonl").exists() else sorted(path.glob("*.jsonl"))
            if not found:
                raise FileNotFoundError(f"text corpus folder {path} has no captions.jsonl or *.jsonl")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"text corpus {path} does not exist")
    return files


def read_corpus(
    paths: Sequence[Path],
    langs: Iterable[str] | None = None,
    sources: Iterable[str] | None = None,
    per_group: int | None = None,
    exclude_images: Iterable[str] = (),
) -> list[Caption]:
    """Captions of the corpus files (English always kept: it teaches), filtered and capped per group.
    ``exclude_images``: photos that must not be learnt from (e.g. an evaluation split's)."""
    wanted = set(langs) | {"en"} if langs else None
    allowed = set(sources) if sources else None
    excluded = set(exclude_images)
    counts: dict[tuple[str, str, str], int] = {}
    kept = []
    for path in corpus_files(paths):
        for caption in iter_captions(path, wanted, need_image=True):
            if caption.image in excluded or (allowed is not None and caption.source not in allowed):
                continue
            key = (caption.image, caption.lang, caption.source)
            counts[key] = counts.get(key, 0) + 1
            if per_group is None or counts[key] <= per_group:
                kept.append(caption)
    return kept


@dataclass
class DistillPairs:
    """Student captions and their teachers, as row indexes into ``texts``.

    ``teacher_rows`` is ragged: the English rows whose (mean) teacher output is the target of student ``i`` are
    ``teacher_rows[teacher_start[i]:teacher_start[i + 1]]``: one row for a translation, every English caption
    of the photo for a same-photo caption (their mean is an image-space target for the photo)."""

    texts: list[str]
    langs: np.ndarray  # (n_texts,)
    student_rows: np.ndarray  # (n_students,)
    student_source: np.ndarray  # (n_students,) source of each student caption
    teacher_rows: np.ndarray  # (n_links,)
    teacher_start: np.ndarray  # (n_students + 1,)

    def __len__(self) -> int:
        return len(self.student_rows)

    def teachers_of(self, students: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(teacher rows, segment id per teacher row) for a batch of student positions, for a segment mean."""
        starts, stops = self.teacher_start[students], self.teacher_start[students + 1]
        rows = np.concatenate([self.teacher_rows[a:b] for a, b in zip(starts, stops, strict=True)])
        segment = np.repeat(np.arange(len(students)), stops - starts)
        return rows, segment


def distill_pairs(
    captions: Sequence[Caption], target: str = "caption", student_langs: Iterable[str] = ()
) -> DistillPairs:
    """Students: every caption whose language is not English (or in ``student_langs``, English excluded).

    ``target="caption"``: a parallel row (task 1, MT) learns from its English original, an independent caption from
    all English captions of its photo. ``target="photo"``: every student learns from all English captions of its
    photo (the mean teacher output approximates the photo's place in the image space)."""
    if target not in ("caption", "photo"):
        raise ValueError(f"unknown distillation target {target!r}; choose caption or photo")
    only = set(student_langs) - {"en"}
    texts: list[str] = []
    langs: list[str] = []
    english: dict[str, list[int]] = {}  # photo → English rows
    original: dict[str, int] = {}  # photo → its task-1 English row
    for caption in captions:
        if caption.lang == "en":
            english.setdefault(caption.image, []).append(len(texts))
            if caption.source == "multi30k-task1":
                original.setdefault(caption.image, len(texts))
            texts.append(caption.text)
            langs.append("en")
    students, sources, links, starts = [], [], [], [0]
    for caption in captions:
        if caption.lang == "en" or (only and caption.lang not in only) or caption.image not in english:
            continue
        parallel = caption.source in PARALLEL_SOURCES and caption.image in original
        teachers = [original[caption.image]] if target == "caption" and parallel else english[caption.image]
        students.append(len(texts))
        sources.append(caption.source)
        texts.append(caption.text)
        langs.append(caption.lang)
        links += teachers
        starts.append(len(links))
    if not students:
        raise ValueError("the text corpus has no non-English caption with an English caption of the same photo")
    return DistillPairs(
        texts=texts,
        langs=np.array(langs),
        student_rows=np.array(students, dtype=np.int64),
        student_source=np.array(sources),
        teacher_rows=np.array(links, dtype=np.int64),
        teacher_start=np.array(starts, dtype=np.int64),
    )
