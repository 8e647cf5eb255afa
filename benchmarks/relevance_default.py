"""The relevance cut-off ``/search`` applies by default: what it costs in R@10 and what it removes (issue 59).

Every query goes through the served pipeline (the route its language takes in ``/search``, default settings) and
is scored exactly against the photos of a library (as the index's re-ranked scores are). A rule keeps the first
``cutoff_count`` results of a query (:func:`indexer.query.pipeline.cutoff_count`: ``z ≥ t`` against its best ``POOL`` scores less the
``SKIP`` best, the best result always kept; also with ``skip = 0``, the rule before issue 59); R@10 with the rule counts a query as found when its relevant photo is among the first
``min(10, kept)`` results.

* **Flickr** (``m30k-f8k``, captions in en, de, fr, cs): a caption's relevant photo is the one it describes; the
  library is the split's photos.
* **ImageNet** (``imagenet-samples``, one photo per class; ``imagenet-labels``' class names in 13 languages): a
  class name's relevant photo is its class's photo; the library is those photos.
* **Mixed**: the Flickr photos plus half of the ImageNet photos as unrelated ones (the other half when tuning),
  with the Flickr captions as queries; **cut** is the share of the ImageNet photos on a page of ``k`` = 20 results
  without a cut-off that the rule removes (R@10 is over the Flickr photos, as on Flickr alone).

The threshold is chosen on tuning sets, then reported on **dev**: the Flickr **train** split (1,000 photos, one
caption per photo and language), its mixed library with the other half of the ImageNet photos, and the class
names of that half on its 350 photos. Their R@10 losses understate dev's (train photos are what the student
learnt from; a pool of 350 is easier than 700), so the rule is the lowest ``t`` that cuts at least ``--min-cut``
(55 %: the 50 % target with a margin) of the unrelated photos in every language, provided its R@10 loses at most
``--max-loss`` (2 %, relative to no cut-off) on every tuning set and language. Run from the repository root (about
4 minutes of one CPU core, most of it the image features, kept in the feature cache for the next run)::

    nice -n 10 .venv/bin/python benchmarks/relevance_default.py --out benchmarks/relevance_default
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from indexer.atomic import atomic_write_json
from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.query.pipeline import CUTOFF_POOL as POOL
from indexer.query.pipeline import CUTOFF_SKIP as SKIP
from indexer.query.pipeline import DEFAULT_Z, cutoff_count
from indexer.settings import Settings
from training.data.features import image_features
from training.data.prepared import prepare_split

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
PAGE = 20
THRESHOLDS = (1.0, 1.3, 1.4, 1.5, 1.55, 1.6, 1.65, 1.7, 1.8, 2.0)
WHOLE_POOL = (1.25, 1.3, 1.35, 1.5)  # the same rule with the best candidates in the background (skip = 0)


Rule = tuple[float, int] | None  # (z_min, skip); None: no cut-off


def rule_name(rule: Rule) -> str:
    if rule is None:
        return "off"
    return f"{rule[0]:g}" if rule[1] == SKIP else f"{rule[0]:g} (skip {rule[1]})"


GRID: list[Rule] = [None, *((t, SKIP) for t in THRESHOLDS), *((t, 0) for t in WHOLE_POOL)]


@dataclass
class Queries:
    """Query vectors, their language, their relevant photo's column in the library, and the library's photos
    that count as unrelated (the mixed library's ImageNet photos)."""

    vectors: np.ndarray
    langs: np.ndarray
    relevant: np.ndarray
    library: np.ndarray
    unrelated: np.ndarray | None = None


def ranked(queries: Queries) -> tuple[np.ndarray, np.ndarray]:
    """The best ``POOL`` columns of each query and their scores, best first."""
    scores = queries.vectors @ queries.library.T
    depth = min(POOL, scores.shape[1])
    order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    return order, np.take_along_axis(scores, order, axis=1)


def measure(queries: Queries, rules: Sequence[Rule] = GRID) -> dict[str, dict[str, dict[str, float]]]:
    """Per rule and language: R@10, results kept on a page of 20, and the unrelated photos' share removed from
    that page."""
    order, top = ranked(queries)
    kept_of = {
        rule: np.array([PAGE if rule is None else min(PAGE, cutoff_count(row, rule[0], skip=rule[1])) for row in top])
        for rule in rules
    }
    hit_at = np.array(
        [
            int(np.flatnonzero(row == rel)[0]) if rel in row else POOL
            for row, rel in zip(order, queries.relevant, strict=True)
        ]
    )
    out: dict[str, dict[str, dict[str, float]]] = {}
    for rule in rules:
        kept = kept_of[rule]
        block: dict[str, dict[str, float]] = {}
        for lang in dict.fromkeys(queries.langs.tolist()):
            rows = queries.langs == lang
            found = (hit_at[rows] < np.minimum(10, kept[rows])).mean()
            cell = {"queries": int(rows.sum()), "r10": float(found), "kept": float(kept[rows].mean())}
            if queries.unrelated is not None:
                page = order[rows, :PAGE]
                unrelated = np.isin(page, queries.unrelated)
                shown = np.arange(PAGE)[None, :] < kept[rows][:, None]
                total = int(unrelated.sum())
                cell["unrelated_on_page"] = total / int(rows.sum())
                cell["unrelated_cut"] = float((unrelated & ~shown).sum() / total) if total else 0.0
            block[lang] = cell
        out[rule_name(rule)] = block
    return out


def chosen(tuning: dict[str, dict[str, dict[str, dict[str, float]]]], max_loss: float, min_cut: float) -> float:
    """The lowest threshold that cuts at least ``min_cut`` of the unrelated photos of the tuning mixed library in
    every language while its R@10 keeps at least ``1 − max_loss`` of no cut-off's on every tuning set and language
    (the highest threshold within that loss when none reaches the cut)."""

    def within(name: str) -> bool:
        return all(
            tuning[part][name][lang]["r10"] >= (1 - max_loss) * tuning[part]["off"][lang]["r10"]
            for part in tuning
            for lang in tuning[part]["off"]
        )

    names = [name for name in tuning["mixed"] if name not in ("off", *map(rule_name, GRID[len(THRESHOLDS) + 1 :]))]
    names = [name for name in names if within(name)]
    cutting = [
        float(name)
        for name in names
        if all(cell["unrelated_cut"] >= min_cut for cell in tuning["mixed"][name].values())
    ]
    return min(cutting) if cutting else max((float(name) for name in names), default=min(THRESHOLDS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--langs", default="en,de,fr,cs")
    parser.add_argument("--tune-images", type=int, default=1000, help="Flickr train photos the threshold is tuned on")
    parser.add_argument("--max-loss", type=float, default=0.02, help="R@10 a threshold may lose, relative")
    parser.add_argument(
        "--min-cut", type=float, default=0.55, help="unrelated photos to cut when tuning (the 50%% target + margin)"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("relevance_default"))
    args = parser.parse_args()
    began = time.perf_counter()
    settings = Settings()
    models = load_models(settings, sentence_cache=settings.resolved_cache_dir)
    pipeline = QueryPipeline(models, settings, QueryCache(0))
    cache = settings.resolved_cache_dir
    langs = args.langs.split(",")

    def space(features: np.ndarray) -> np.ndarray:
        return np.asarray(models.image_space.apply(features), dtype=np.float32)

    # ImageNet photos and their class names
    samples = args.data / "imagenet-samples"
    rows = [json.loads(line) for line in (samples / "images.jsonl").read_text("utf-8").splitlines() if line]
    imagenet = space(
        image_features(
            models.image_encoder, [samples / "images" / row["image"] for row in rows], cache, desc="imagenet"
        )
    )
    column_of = {int(row["class_index"]): i for i, row in enumerate(rows)}
    labels = json.loads((args.data / "imagenet-labels" / "babel-imagenet.json").read_text("utf-8"))
    served = set(pipeline.languages or [])
    texts, label_langs, label_photo = [], [], []
    for key, (indices, names) in labels.items():
        lang = key.lower()
        if served and lang not in served:
            continue
        for index, name in zip(indices, names, strict=True):
            if int(index) in column_of:
                texts.append(name)
                label_langs.append(lang)
                label_photo.append(column_of[int(index)])
    halves = (np.arange(len(rows)) % 2 == 0, np.arange(len(rows)) % 2 == 1)  # tuning's distractors, dev's

    def flickr(
        split: str, max_images: int | None, per_lang: int | None, distractors: np.ndarray
    ) -> tuple[Queries, Queries]:
        prepared = prepare_split(
            args.data / "m30k-f8k", split, langs, models.image_encoder, None, cache, per_lang, max_images
        )
        photos = space(prepared.image_features)
        vectors = pipeline.embed_queries(prepared.caption_text, prepared.caption_lang.tolist())
        alone = Queries(vectors, prepared.caption_lang, prepared.caption_image, photos)
        library = np.concatenate([photos, imagenet[distractors]])
        unrelated = np.arange(len(photos), len(library))
        return alone, Queries(vectors, prepared.caption_lang, prepared.caption_image, library, unrelated)

    tune_alone, tune_mixed = flickr("train", args.tune_images, 1, halves[0])
    label_vectors = pipeline.embed_queries(texts, label_langs)
    photo_of = np.array(label_photo)
    in_half = halves[0][photo_of]
    renumbered = np.cumsum(halves[0]) - 1  # a tuning photo's column in the half library
    tune_labels = Queries(
        label_vectors[in_half], np.array(label_langs)[in_half], renumbered[photo_of[in_half]], imagenet[halves[0]]
    )
    tuning = {
        "flickr": measure(tune_alone),
        "imagenet": measure(tune_labels),
        "mixed": measure(tune_mixed),
    }
    threshold = chosen(tuning, args.max_loss, args.min_cut)
    dev_alone, dev_mixed = flickr("dev", None, None, halves[1])
    label_queries = Queries(label_vectors, np.array(label_langs), photo_of, imagenet)
    dev = {
        "flickr": measure(dev_alone),
        "imagenet": measure(label_queries),
        "mixed": measure(dev_mixed),
    }
    report = {
        "command": shlex.join(
            ["nice", "-n", "10", ".venv/bin/python", "benchmarks/relevance_default.py", *sys.argv[1:]]
        ),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": round(time.perf_counter() - began),
        "text_side": models.label,
        "pool": POOL,
        "skip": SKIP,
        "page": PAGE,
        "max_loss": args.max_loss,
        "min_cut": args.min_cut,
        "chosen_z": threshold,
        "served_default_z": DEFAULT_Z,
        "libraries": {
            "flickr_dev": len(dev_alone.library),
            "imagenet": len(imagenet),
            "distractors": int(halves[1].sum()),
        },
        "tuning": tuning,
        "dev": dev,
    }
    atomic_write_json(args.out.with_suffix(".json"), report)
    markdown = render(report)
    args.out.with_suffix(".md").write_text(markdown, encoding="utf-8")
    print(markdown)


def render(report: dict[str, Any]) -> str:
    z = f"{report['served_default_z']:g}"
    lines = [
        "# The default relevance cut-off: R@10 kept, unrelated photos cut",
        "",
        f"Command: `{report['command']}` ({report['seconds']} s, {report['when']}; text side {report['text_side']}).",
        "",
        f"Rule (`indexer/query/pipeline.py`, `cutoff_count`): keep results while `z ≥ t`, standardised against the query's best "
        f"{report['pool']} scores less the {report['skip']} best (the best result always kept); `skip 0`: the same "
        "with the best candidates in the background (the cut-off before issue 59, at t = 1.5). Chosen on the tuning "
        f"sets (the lowest `t` cutting ≥ {report['min_cut']:.0%} of the unrelated photos in every language, losing "
        f"≤ {report['max_loss']:.0%} of R@10; the script's docstring): **t = {report['chosen_z']:g}**; `/search` "
        f"serves `cutoff_z` = {z} by default. R@10 loss is relative to no cut-off; **cut**: share of the unrelated "
        f"(ImageNet) photos on a page of {report['page']} that the rule removes; **kept**: results left on that "
        "page (mean).",
        "",
        f"## The default (t = {z}) on dev",
        "",
        "| set | lang | queries | R@10 off | R@10 default | loss | unrelated cut |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for part, block in report["dev"].items():
        for lang, base in block["off"].items():
            cell = block[z][lang]
            loss = (base["r10"] - cell["r10"]) / base["r10"] if base["r10"] else 0.0
            cut = f"{cell['unrelated_cut']:.1%}" if "unrelated_cut" in cell else ""
            lines.append(
                f"| {part} | {lang} | {base['queries']} | {base['r10']:.3f} | {cell['r10']:.3f} | {loss:.1%} | {cut} |"
            )
    lines.append("")
    sizes = report["libraries"]
    titles = {
        "flickr": f"Flickr dev ({sizes['flickr_dev']} photos)",
        "imagenet": f"ImageNet samples ({sizes['imagenet']} photos, class names as queries)",
        "mixed": f"Mixed dev library (Flickr dev + {sizes['distractors']} ImageNet photos)",
    }
    for part, title in titles.items():
        block = report["dev"][part]
        langs = list(block["off"])
        lines += [f"## {title}: every rule", "", "| t | " + " | ".join(langs) + " |", "| --- |" + " --- |" * len(langs)]
        for name, cells in block.items():
            row = []
            for lang in langs:
                cell, base = cells[lang], block["off"][lang]["r10"]
                text = f"{cell['r10']:.3f}"
                if name != "off":
                    text += f" ({(cell['r10'] - base) / base:+.1%})" if base else ""
                if "unrelated_cut" in cell:
                    text += f", cut {cell['unrelated_cut']:.1%}"
                text += f", kept {cell['kept']:.1f}"
                row.append(text)
            lines.append(f"| {name} | " + " | ".join(row) + " |")
        queries = ", ".join(f"{lang} {block['off'][lang]['queries']}" for lang in langs)
        lines += ["", f"Queries: {queries}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
