"""Measure POLYGLOT_CONCEPT_FUSION_WEIGHT (α): text→image R@10 per language for a grid of α, served text side.

Each query goes through the served pipeline once with fusion off (``QueryPipeline.embed_queries``); the concept it
names (:class:`indexer.query.pipeline.ConceptFusion`, the query's own language) and its English concept vector are
then fused in numpy for every α of the grid (the exact vectors ``/search`` computes with that α), and ranked
exactly over the pool. Sets:

* ``tune-scenes``/``held-scenes``: m30k-f8k **train** photos (a fixed random subset, two halves: one to choose α,
  one held out), one caption per photo and language;
* ``tune-names``: names of **non-dev** concepts on the same train photos: a photo whose CNN top class (p ≥ 0.5)
  is an ImageNet class absent from the wide dev set is a right answer for every lexicon name of that class's
  concept in every language (a query hits when any of its photos is in its top 10);
* ``dev-wide`` (imagenet-samples + imagenet-labels, parts in_lexicon / not_in_lexicon) and ``dev-flickr``
  (m30k-f8k dev): measured only, never used to choose.

    PYTHONPATH=. nice -n 10 .venv/bin/python benchmarks/concept_fusion.py --data ../shared/data \\
        --json docs/results/concept-fusion.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from indexer.asset_paths import SHIPPED_CONCEPTS
from indexer.concepts import ConceptLexicon
from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.query.models import load_fusion
from indexer.query.pipeline import ConceptFusion
from indexer.settings import Settings
from training.data.prepared import PreparedSplit, prepare_split
from training.data.wide_dev import build_wide_dev
from training.evaluation.name_lexicon import image_concepts, in_lexicon
from training.evaluation.retrieval_metrics import t2i_ranks
from training.evaluation.served_eval import served_queries

DEV_LANGUAGES = frozenset({"en", "fr", "es", "pt", "de", "ru", "zh", "ko", "pl", "tr", "ja", "cs", "it"})
GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0)


def hits_at_10(queries: np.ndarray, positives: list[np.ndarray], images: np.ndarray) -> np.ndarray:
    """Whether any right photo of each query is among its ten best (ties against the query)."""
    scores = queries @ images.T
    tenth = -np.sort(-scores, axis=1)[:, min(9, images.shape[0] - 1)]
    return np.array([bool((scores[i, p] >= tenth[i]).any()) for i, p in enumerate(positives)])


def per_language(langs: np.ndarray, hit: np.ndarray, mask: np.ndarray | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for lang in sorted(set(langs.tolist())):
        rows = (langs == lang) if mask is None else (langs == lang) & mask
        out[lang] = {"r10": round(float(hit[rows].mean()), 4) if rows.any() else None, "queries": int(rows.sum())}
    return out


def fused_table(
    fusion: ConceptFusion, q: np.ndarray, rows: list[int | None], score: Any, grid: tuple[float, ...]
) -> dict[str, Any]:
    matched = sum(r is not None for r in rows)
    return {"matched": matched, "queries": len(rows), "alpha": {str(a): score(fusion.fuse(q, rows, a)) for a in grid}}


def caption_set(pipeline: QueryPipeline, fusion: ConceptFusion, split: PreparedSplit, parts: np.ndarray | None):
    q = served_queries(pipeline, split)
    rows = fusion.rows(split.caption_text, split.caption_lang.tolist())
    images = pipeline.models.image_space.apply(split.image_features)

    def score(vectors: np.ndarray) -> dict[str, Any]:
        hit = t2i_ranks(vectors, split.caption_image, images) < 10
        table = {"all": per_language(split.caption_lang, hit)}
        if parts is not None:
            table["in_lexicon"] = per_language(split.caption_lang, hit, parts)
            table["not_in_lexicon"] = per_language(split.caption_lang, hit, ~parts)
        return table

    return q, rows, score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--train-images", type=int, default=2000, help="train photos (halves: tune, held out)")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--sets", default="tune-scenes,held-scenes,tune-names,dev-wide,dev-flickr")
    args = parser.parse_args()
    wanted = set(args.sets.split(","))
    settings = Settings()
    cache = settings.resolved_cache_dir
    models = load_models(settings, bridge=True, sentence_cache=cache, clc=False)
    models.fusion = None  # queries embedded unfused; α applied below
    fusion = load_fusion(settings, models.text)
    pipeline = QueryPipeline(models, settings, QueryCache(0))
    lexicon = ConceptLexicon.load(settings.tagging.lexicon_dir or SHIPPED_CONCEPTS)
    samples = args.data / "imagenet-samples"
    dev_concepts = set(image_concepts(samples).values())
    report: dict[str, Any] = {"grid": list(GRID), "lexicon_digest": lexicon.digest[:16], "sets": {}}
    flickr = args.data / "m30k-f8k"
    if wanted & {"tune-scenes", "held-scenes", "tune-names"}:
        train = prepare_split(
            flickr,
            "train",
            None,
            models.image_encoder,
            None,
            cache,
            captions_per_lang=1,
            max_images=args.train_images,
        )
        half = len(train.images) // 2
        for name, keep in (("tune-scenes", np.arange(half)), ("held-scenes", np.arange(half, len(train.images)))):
            if name not in wanted:
                continue
            chosen = np.flatnonzero(np.isin(train.caption_image, keep))
            remap = {int(old): new for new, old in enumerate(keep)}
            sub = PreparedSplit(
                [train.images[i] for i in keep],
                train.image_features[keep],
                np.array([remap[int(i)] for i in train.caption_image[chosen]]),
                train.caption_lang[chosen],
                [train.caption_text[i] for i in chosen],
                np.zeros((len(chosen), 1), dtype=np.float32),
            )
            q, rows, score = caption_set(pipeline, fusion, sub, None)
            report["sets"][name] = fused_table(fusion, q, rows, score, GRID)
            print(name, json.dumps(report["sets"][name]["alpha"]["0.0"]["all"].get("en")), flush=True)
        if "tune-names" in wanted:
            if not models.image_encoder.loaded:
                models.image_encoder.load()
            probabilities = models.image_encoder.classify(train.image_features)
            top, confidence = probabilities.argmax(axis=1), probabilities.max(axis=1)
            by_class = lexicon.imagenet_concepts()
            photos: dict[str, list[int]] = {}
            for photo, (cls, p) in enumerate(zip(top.tolist(), confidence.tolist(), strict=True)):
                concept = by_class[cls]
                if p >= 0.5 and concept not in dev_concepts:
                    photos.setdefault(concept, []).append(photo)
            texts, langs, positives = [], [], []
            for concept, found in sorted(photos.items()):
                for lang in ["en", *lexicon.languages]:
                    written = lexicon.name(concept, lang)
                    if written and lang in DEV_LANGUAGES:
                        texts.append(written)
                        langs.append(lang)
                        positives.append(np.array(found))
            images = models.image_space.apply(train.image_features)
            q = pipeline.embed_queries(texts, langs)
            rows = fusion.rows(texts, langs)
            lang_array = np.array(langs)
            report["sets"]["tune-names"] = fused_table(
                fusion, q, rows, lambda v: {"all": per_language(lang_array, hits_at_10(v, positives, images))}, GRID
            )
            report["sets"]["tune-names"]["concepts"] = len(photos)
            print("tune-names", len(photos), "concepts", len(texts), "queries", flush=True)
    if "dev-wide" in wanted:
        wide = build_wide_dev(samples, args.data / "imagenet-labels", cache / "wide-dev")
        split = prepare_split(wide, "dev", None, models.image_encoder, None, cache)
        parts = in_lexicon(split, image_concepts(samples), lexicon)
        q, rows, score = caption_set(pipeline, fusion, split, parts)
        report["sets"]["dev-wide"] = fused_table(fusion, q, rows, score, GRID)
    if "dev-flickr" in wanted:
        split = prepare_split(flickr, "dev", None, models.image_encoder, None, cache)
        q, rows, score = caption_set(pipeline, fusion, split, None)
        report["sets"]["dev-flickr"] = fused_table(fusion, q, rows, score, GRID)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
