"""Wide-dev recalls in two parts: class names that the concept lexicon has, and names it lacks.

On the wide dev set (:mod:`training.data.wide_dev`: one ImageNet photo per class, its class name per language as
the query) a name is **in_lexicon** when it is, case and spacing aside, a name of the photo's own concept in that
language in the shipped concept lexicon (``indexer/assets/concepts``: class ``n02084071`` is concept
``02084071-n``), and **not_in_lexicon** otherwise: what the model finds beyond its dictionary. English names count
against the concept's English lemmas. Text→image ranks come from the evaluation itself (the served index or the
label bridge's exact ranking), so each part's recalls are those of the whole table, split.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from indexer.concepts import ConceptLexicon
from training.data.prepared import PreparedSplit
from training.evaluation.retrieval_metrics import KS

PARTS = ("in_lexicon", "not_in_lexicon")


def fold(name: str) -> str:
    """A name as the lexicon compares names: case-folded, runs of spaces as one."""
    return " ".join(name.casefold().split())


def image_concepts(samples: Path) -> dict[str, str]:
    """Each photo of ``imagenet-samples`` (``images.jsonl``: image, wnid) → its class's concept id."""
    index = Path(samples) / "images.jsonl"
    rows = [json.loads(line) for line in index.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["image"]: f"{row['wnid'][1:]}-{row['wnid'][0]}" for row in rows}


def in_lexicon(split: PreparedSplit, concepts: Mapping[str, str], lexicon: ConceptLexicon) -> np.ndarray:
    """One flag per caption: its text is a name of its photo's concept in its language in ``lexicon``."""
    flags = np.zeros(len(split.caption_text), dtype=bool)
    known: dict[tuple[str, str], set[str]] = {}
    for row, (text, lang, image) in enumerate(
        zip(split.caption_text, split.caption_lang.tolist(), split.caption_image.tolist(), strict=True)
    ):
        concept = concepts.get(split.images[image])
        if concept is None or concept not in lexicon:
            continue
        key = (concept, lang)
        if key not in known:
            known[key] = {fold(name) for name in lexicon.names(concept, lang)}
        flags[row] = fold(text) in known[key]
    return flags


def recalls_by_part(split: PreparedSplit, t2i_ranks: np.ndarray, flags: np.ndarray) -> dict[str, Any]:
    """``lang → part → {"r1", "r5", "r10", "queries"}`` (a part without queries has recalls ``None``), plus
    each language's share of names in the lexicon."""
    table: dict[str, Any] = {}
    for lang in split.languages:
        rows = split.caption_lang == lang
        block: dict[str, Any] = {"share_in_lexicon": round(float(flags[rows].mean()), 4) if rows.any() else 0.0}
        for part, chosen in (("in_lexicon", rows & flags), ("not_in_lexicon", rows & ~flags)):
            ranks = t2i_ranks[chosen]
            recalls: dict[str, Any] = {f"r{k}": round(float(np.mean(ranks < k)), 4) if len(ranks) else None for k in KS}
            block[part] = {**recalls, "queries": int(chosen.sum())}
        table[lang] = block
    return table


def name_lexicon_report(
    split: PreparedSplit, t2i_ranks: np.ndarray, samples: Path, lexicon_dir: Path
) -> dict[str, Any]:
    """The JSON block ``polyglot evaluate --name-lexicon`` adds to its report."""
    lexicon = ConceptLexicon.load(lexicon_dir)
    flags = in_lexicon(split, image_concepts(samples), lexicon)
    return {
        "lexicon": str(lexicon_dir),
        "lexicon_digest": lexicon.digest[:16],
        "languages": recalls_by_part(split, t2i_ranks, flags),
    }
