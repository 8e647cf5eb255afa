"""Pseudo-pairs: annotate the photos of one collection with the captions of another, by sentence similarity under a
trained tower (Kádár et al., "Bootstrapping Disjoint Datasets for Multilingual Multimodal Representation
Learning", §2.2).

Every caption ``c`` of the *target* collection (its ``split``) is embedded by the tower, as is every caption of the
*source* collection in another language; the most similar source caption (cosine) ``ĉ`` is attached to ``c``'s
photo, giving the triplet ``<i, c, ĉ>``. Filtering on the similarity of the pair (the paper's three options):
``all`` (none), ``top25`` (keep the 25 % most similar pairs) and ``drop-bottom25`` (drop the 25 % least similar).

The output is a collection folder: the target's photos (symbolic links), ``captions.jsonl`` with the pseudo
captions (``source`` = ``pseudopair``) and ``splits/<split>.txt``; with ``with_originals`` it is the target
collection itself (all its captions, photos and splits, e.g. the held-out one) plus the pseudo captions, so that
the caption–caption task has pairs, and ``pseudopairs.json``: the hubness report — the share
of source captions used at least once, and the share of pairs whose caption is one of the 150 most used (the
paper's "top 150 captions cover 23 %").
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from indexer.atomic import atomic_write_json
from indexer.encoders import build_text_encoder
from indexer.settings import Settings
from indexer.tower import TextTower
from training.data.collections import link_images, write_lines
from training.data.dataset import CaptionDataset, DatasetError, load_dataset, read_split
from training.data.features import text_embeddings

FILTERS = ("all", "top25", "drop-bottom25")
TOP = 150


def match(queries: np.ndarray, candidates: np.ndarray, chunk: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """For every row of ``queries`` (unit vectors), the index of its most similar candidate and the cosine."""
    best = np.empty(len(queries), dtype=np.int64)
    score = np.empty(len(queries), dtype=np.float32)
    for start in range(0, len(queries), chunk):
        sims = queries[start : start + chunk] @ candidates.T
        best[start : start + chunk] = sims.argmax(axis=1)
        score[start : start + chunk] = sims.max(axis=1)
    return best, score


def keep_mask(scores: np.ndarray, kind: str) -> np.ndarray:
    if kind == "all":
        return np.ones(len(scores), dtype=bool)
    if kind == "top25":
        return scores >= np.quantile(scores, 0.75)
    if kind == "drop-bottom25":
        return scores >= np.quantile(scores, 0.25)
    raise ValueError(f"unknown filter {kind!r}; choose one of: {', '.join(FILTERS)}")


def hubness(chosen: Sequence[int], n_source: int) -> dict[str, Any]:
    """How evenly the source captions are used: share used at least once; share of pairs the top 150 cover."""
    counts = Counter(chosen)
    top = sum(count for _, count in counts.most_common(TOP))
    return {
        "pairs": len(chosen),
        "source_captions": n_source,
        "distinct_used": len(counts),
        "share_used": len(counts) / max(n_source, 1),
        f"top{TOP}_share_of_pairs": top / max(len(chosen), 1),
        "most_used": counts.most_common(1)[0][1] if counts else 0,
    }


def make_pseudopairs(
    tower_dir: Path,
    source: Path,
    target: Path,
    out: Path,
    cache_dir: Path,
    settings: Settings,
    split: str = "train",
    keep: str = "all",
    with_originals: bool = False,
) -> dict[str, Any]:
    if keep not in FILTERS:
        raise ValueError(f"unknown filter {keep!r}; choose one of: {', '.join(FILTERS)}")
    tower = TextTower.from_pretrained(tower_dir)
    encoder = build_text_encoder(settings, tower.text_encoder)
    targets = load_dataset(target, split)
    target_langs = set(targets.languages())
    sources = load_dataset(source, split)
    sources.captions = [c for c in sources.captions if c.lang not in target_langs]  # pairs cross languages
    for name, dataset in (("target", targets), ("source", sources)):
        if not dataset.captions:
            raise DatasetError(f"the {name} collection has no captions to pair in split {split!r}")

    def embed(dataset: CaptionDataset, desc: str) -> np.ndarray:
        texts = [c.text for c in dataset.captions]
        return tower.embed(text_embeddings(encoder, texts, cache_dir, desc=desc))

    best, score = match(embed(targets, "target captions"), embed(sources, "source captions"))
    kept = keep_mask(score, keep)
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for k in tqdm(np.flatnonzero(kept), desc="pseudo-pairs", unit="pair", leave=False):
        caption, found = targets.captions[k], sources.captions[int(best[k])]
        if (caption.image, found.text) in seen:  # the same caption picked twice for one photo: one row
            continue
        seen.add((caption.image, found.text))
        rows.append({"image": caption.image, "lang": found.lang, "text": found.text, "source": "pseudopair",
                     "score": round(float(score[k]), 4), "for": caption.text})  # fmt: skip
    photos = sorted({row["image"] for row in rows})
    report_photos = len(photos)
    if with_originals:  # the target collection itself (every split, photo and caption) plus the pseudo captions
        _copy_collection(targets.root, Path(out))
        rows = [*_read_rows(targets.root / "captions.jsonl"), *rows]
        photos = read_split(targets.root, split)
    link_images(Path(out), targets.root, photos)
    write_lines(Path(out) / "captions.jsonl", [json.dumps(r, ensure_ascii=False) for r in rows])
    write_lines(Path(out) / "splits" / f"{split}.txt", photos)
    report = {
        "tower": str(tower_dir),
        "source": str(source),
        "target": str(target),
        "split": split,
        "filter": keep,
        "with_originals": with_originals,
        "target_captions": len(targets.captions),
        "kept_pairs": int(kept.sum()),
        "rows_written": sum(row["source"] == "pseudopair" for row in rows),
        "photos": report_photos,  # photos that received a pseudo caption
        "score_quantiles": {q: round(float(np.quantile(score, q / 100)), 4) for q in (0, 25, 50, 75, 100)},
        "hubness_all": hubness(best.tolist(), len(sources.captions)),
        "hubness_kept": hubness(best[kept].tolist(), len(sources.captions)),
    }
    atomic_write_json(Path(out) / "pseudopairs.json", report)
    return report


def _read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _copy_collection(source: Path, out: Path) -> None:
    """The other splits of the target (e.g. its held-out photos, for early stopping), photos linked."""
    for path in sorted((source / "splits").glob("*.txt")):
        images = read_split(source, path.stem)
        link_images(out, source, images)
        write_lines(out / "splits" / path.name, images)
