"""Evaluate contextual multilingual tagging on a captioned split (default: dev of m30k-f8k).

    .venv/bin/python -m training.evaluation.tagging_eval --data ../shared/data/m30k-f8k \\
        --lexicons ../shared/data/lexicons --out docs/tagging/results.json

Target vocabularies come from the **train** split's captions only (content words, ``--min-count``); the English
caption pool for caption source tags is the train split's English captions (never the evaluated images'
own captions). For every evaluated image and language, each method yields ``k`` tags:

* ``contextual``: eq. 5 with W1/W2 (0.65/0.35), one target tag per source tag;
* ``image-only`` (W2 = 0) and ``text-only`` (W1 = 0): the two halves of eq. 5 alone, same assignment;
* ``lexicon``: word-level translation of the same source tags with the MUSE lexicon (cannot see the image).

Metrics (see :mod:`training.evaluation.tag_metrics`): precision@5 against the image's captions in that language, and
recall of the captions' content words by all ``k`` tags. Each method runs with both source-tag kinds
(ImageNet classes, retrieved captions' words). The methods are named in :mod:`training.evaluation.tagging_methods`, the
tables written in :mod:`training.evaluation.tagging_tables`, the ImageNet check done in :mod:`training.evaluation.tagging_zero_shot`.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from indexer.asset_paths import shipped_tower_path
from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.query import load_models
from indexer.settings import ModelSettings, Settings
from indexer.tagging.cached import embed_cached
from indexer.tagging.ranking import DEFAULT_W1, DEFAULT_W2, assign_tags
from indexer.tagging.source_tags import MatrixCaptionRetriever
from indexer.tagging.text import count_content_words
from indexer.tagging.vocabulary import Vocabulary, build_vocabulary
from indexer.tower import TextEmbedder, TextTower
from training.data.dataset import load_dataset
from training.data.features import image_features
from training.evaluation.lexicon_baseline import Lexicon
from training.evaluation.tag_metrics import Reference, content_recall, precision_at
from training.evaluation.tagging_methods import SOURCE_KINDS, WEIGHTINGS, source_tags_for
from training.evaluation.tagging_tables import imagenet_markdown, markdown, sweep_markdown
from training.evaluation.tagging_zero_shot import imagenet_check


def build_vocabularies(
    train_captions: dict[str, list[str]], text: TextEmbedder, cache_dir: Path, min_count: int, max_words: int
) -> tuple[dict[str, Vocabulary], dict[str, Counter[str]]]:
    vocabularies, frequencies = {}, {}
    for lang, texts in train_captions.items():
        counts = count_content_words(texts, lang)
        frequencies[lang] = counts
        vocabularies[lang] = build_vocabulary(
            lang,
            counts,
            partial(embed_cached, text, cache_dir=cache_dir, lang=lang),
            min_count=min_count,
            max_words=max_words,
            batch_size=4096,
        )
    return vocabularies, frequencies


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    config = TextTower.read_config(args.tower)
    settings = Settings(models_dir=args.models_dir, models=ModelSettings(image_encoder=config["image_encoder"]))
    models = load_models(settings.model_copy(update={"tower_path": args.tower}))
    text, encoder, space = models.text, models.image_encoder, models.image_space
    encoder.load()
    langs = [lang for lang in args.langs.split(",") if lang]

    train = load_dataset(args.data, "train", ["en", *langs])
    train_captions: dict[str, list[str]] = defaultdict(list)
    for caption in train.captions:
        train_captions[caption.lang].append(caption.text)
    vocabularies, frequencies = build_vocabularies(
        {lang: train_captions[lang] for lang in langs}, text, args.cache_dir, args.min_count, args.max_words
    )
    english = list(dict.fromkeys(train_captions["en"]))
    retriever = MatrixCaptionRetriever(english, embed_cached(text, english, args.cache_dir))

    dev = load_dataset(args.data, args.split, langs)
    # --images/--skip select a slice of the split: settings are chosen on dev[:500] and reported on dev[500:]
    # (the train split cannot serve: the tower was trained on its images).
    images = dev.images[args.skip :]
    images = images[: args.images] if args.images else images
    features = image_features(encoder, [dev.image_path(i) for i in images], args.cache_dir, desc=args.split)
    image_vectors = space.apply(features)
    references: dict[str, list[Reference]] = {}
    by_image: dict[tuple[str, str], list[str]] = defaultdict(list)
    for caption in dev.captions:
        by_image[(caption.image, caption.lang)].append(caption.text)
    for lang in langs:
        references[lang] = [Reference.from_captions(by_image[(image, lang)], lang) for image in images]

    lexicons = {}
    for lang in langs:
        path = args.lexicons / f"en-{lang}.tsv"
        lexicons[lang] = Lexicon.read(path) if path.exists() else None

    k = args.k
    sources = {kind: source_tags_for(kind, features, image_vectors, encoder, retriever, k) for kind in SOURCE_KINDS}
    unique = sorted({tag for kind in sources.values() for tags in kind for tag in tags})
    source_vector = dict(zip(unique, embed_cached(text, unique, args.cache_dir), strict=True))
    # Extra source tags for the lexicon: it skips words it cannot translate, and must still reach k tags.
    deep_sources = {
        kind: source_tags_for(kind, features, image_vectors, encoder, retriever, 4 * k) for kind in SOURCE_KINDS
    }

    scores: dict[str, dict[str, dict[str, list[float]]]] = {}
    examples: list[dict[str, Any]] = []
    for lang in langs:
        vocab = vocabularies[lang]
        image_sim = image_vectors @ vocab.vectors.T  # (n_images, vocab), eq. 3 for every image at once
        table: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"p5": [], "recall": [], "n": []})
        for row in tqdm(range(len(images)), desc=f"tag {lang}", unit="img"):
            reference = references[lang][row]
            for kind in SOURCE_KINDS:
                tags = sources[kind][row]
                if not tags:
                    continue
                source_sim = np.stack([source_vector[t] for t in tags]) @ vocab.vectors.T  # eq. 4
                for name, weights in WEIGHTINGS.items():
                    w1, w2 = weights or (args.w1, args.w2)
                    ranked = assign_tags(w1 * image_sim[row][None, :] + w2 * source_sim)
                    predicted = [vocab.words[r.target] for r in ranked]
                    _record(table[f"{name}/{kind}"], predicted, reference)
                    if name == "contextual" and row < args.examples:
                        examples.append(
                            {
                                "image": images[row],
                                "lang": lang,
                                "source_kind": kind,
                                "sources": tags,
                                "tags": predicted,
                            }
                        )
                for w1 in args.sweep:  # sensitivity to W1 (W2 = 1 - W1): reported, never used to pick W
                    ranked = assign_tags(w1 * image_sim[row][None, :] + (1.0 - w1) * source_sim)
                    _record(table[f"sweep-{w1:g}/{kind}"], [vocab.words[r.target] for r in ranked], reference)
                lexicon = lexicons[lang]
                if lexicon is not None:
                    predicted = lexicon.translate_tags(deep_sources[kind][row], frequencies[lang], k)
                    _record(table[f"lexicon/{kind}"], predicted, reference)
        scores[lang] = table

    imagenet = (
        imagenet_check(args.imagenet_labels, text, encoder, features, image_vectors, args)
        if args.imagenet_labels
        else None
    )
    return {
        "command": args.command,
        "split": args.split,
        "skip": args.skip,
        "images": len(images),
        "k": k,
        "w1": args.w1,
        "w2": args.w2,
        "min_count": args.min_count,
        "sweep_w1": args.sweep,
        "tower": {
            "path": str(args.tower),
            "fingerprint": text.fingerprint,
            "text_encoder": text.encoder.name,
            "image_encoder": encoder.name,
        },
        "text_encoder_covers": {lang: text.encoder.supports(lang) for lang in langs},
        "vocabulary_sizes": {lang: len(v) for lang, v in vocabularies.items()},
        "english_caption_pool": len(english),
        "results": {
            lang: {method: _summary(values) for method, values in sorted(table.items())}
            for lang, table in scores.items()
        },
        # Photos after the first --tuned-on ones: the part of the split no setting was chosen on.
        "results_after_tuning_part": {
            lang: {
                method: _summary({key: v[args.tuned_on :] for key, v in values.items()})
                for method, values in sorted(table.items())
                if len(values["p5"]) == len(images)
            }
            for lang, table in scores.items()
        }
        if 0 < args.tuned_on < len(images)
        else None,
        "tuned_on_first": args.tuned_on,
        "examples": examples,
        "imagenet_zero_shot": imagenet,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": platform.platform(),
    }


def _record(bucket: dict[str, list[float]], predicted: list[str], reference: Reference) -> None:
    bucket["p5"].append(precision_at(predicted, reference, 5))
    bucket["recall"].append(content_recall(predicted, reference))
    bucket["n"].append(len(predicted))


def _summary(values: dict[str, list[float]]) -> dict[str, float]:
    return {
        "precision@5": round(float(np.mean(values["p5"])), 4),
        "content_recall": round(float(np.mean(values["recall"])), 4),
        "tags_per_image": round(float(np.mean(values["n"])), 2),
        "images": len(values["p5"]),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="m30k-f8k layout folder")
    parser.add_argument("--lexicons", type=Path, required=True, help="folder with en-XX.tsv (MUSE)")
    parser.add_argument("--tower", type=Path, default=shipped_tower_path())
    parser.add_argument("--models-dir", type=Path, default=Path("var/models"))
    parser.add_argument("--cache-dir", type=Path, default=Path("var/cache"))
    parser.add_argument("--split", default="dev")
    parser.add_argument("--tuned-on", type=int, default=0, help="also summarise the photos after the first N")
    parser.add_argument("--skip", type=int, default=0, help="leave out the first N images of the split")
    parser.add_argument("--langs", default="de,fr,cs,pt")
    parser.add_argument("--images", type=int, default=0, help="evaluate only the first N images (0 = all)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--w1", type=float, default=DEFAULT_W1)
    parser.add_argument("--w2", type=float, default=DEFAULT_W2)
    parser.add_argument("--min-count", type=int, default=3)
    parser.add_argument("--max-words", type=int, default=5000)
    parser.add_argument("--examples", type=int, default=5, help="keep the tags of the first N images per language")
    parser.add_argument(
        "--sweep",
        type=lambda v: [float(x) for x in v.split(",") if x],
        default=[],
        help="also report precision@5 for these W1 values (W2 = 1 - W1), e.g. 0,0.25,0.5,0.65,0.75,1",
    )
    parser.add_argument("--imagenet-labels", type=Path, help="babel-imagenet.json: adds the zero-shot label check")
    parser.add_argument("--out", type=Path, help="write the JSON report here (and a .md table beside it)")
    parser.add_argument("--threads", type=int, default=1)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    import shlex
    import sys

    import torch

    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    args.command = shlex.join(["python", "-m", "training.evaluation.tagging_eval", *(argv or sys.argv[1:])])
    report = evaluate(args)
    table = markdown(report)
    if report["results_after_tuning_part"]:
        table += f"\nThe same on the photos after the first {args.tuned_on} (not used to choose settings):\n\n"
        table += markdown(report, "results_after_tuning_part").split("\n", 2)[2]
    if args.sweep:
        table += "\nPrecision@5 as a function of W1 (W2 = 1 - W1), contextual assignment:\n\n"
        table += sweep_markdown(report, args.sweep)
    if report["imagenet_zero_shot"]:
        table += "\nZero-shot ImageNet labels (accuracy of the tag chosen for each top-5 class):\n\n"
        table += imagenet_markdown(report["imagenet_zero_shot"])
    print(table)
    if args.out:
        atomic_write_json(args.out, report)
        atomic_write_bytes(args.out.with_suffix(".md"), table.encode())


if __name__ == "__main__":
    main()
