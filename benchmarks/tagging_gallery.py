"""Gallery of ambiguous English source tags: the same word on different real photos, tagged with context.

    .venv/bin/python benchmarks/tagging_gallery.py --out docs/tagging/gallery-ambiguous.md

For each word (bank, spring, turkey, glass, …) it picks photos of the data set whose English captions use the
word, gives each photo that word as its only source tag (k = 1), and prints the contextual tag next to the
lexicon translation (the baseline, the same for every photo). Vocabularies: train-split captions, as in the
evaluation. Everything in the output is computed, nothing is typed in.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from indexer.asset_paths import shipped_tower_path
from indexer.atomic import atomic_write_bytes
from indexer.encoders import build_image_encoder
from indexer.query import load_text_tower
from indexer.settings import Settings
from indexer.tagging.cached import embed_cached
from indexer.tagging.ranking import DEFAULT_W1, DEFAULT_W2, contextual_tags
from indexer.tagging.text import tokenize
from training.data.dataset import load_dataset
from training.data.features import image_features
from training.evaluation.lexicon_baseline import Lexicon
from training.evaluation.tagging_eval import build_vocabularies

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA / "m30k-f8k")
    parser.add_argument("--lexicons", type=Path, default=DATA / "lexicons")
    parser.add_argument("--tower", type=Path, default=shipped_tower_path())
    parser.add_argument("--models-dir", type=Path, default=Path("var/models"))
    parser.add_argument("--cache-dir", type=Path, default=Path("var/cache"))
    parser.add_argument("--words", default="bank,spring,turkey,glass,bat,court,pitcher,trunk")
    parser.add_argument("--langs", default="fr,de,pt")
    parser.add_argument("--per-word", type=int, default=3)
    parser.add_argument("--min-count", type=int, default=30, help="as in the evaluation")
    parser.add_argument("--w1", type=float, default=DEFAULT_W1)
    parser.add_argument("--w2", type=float, default=DEFAULT_W2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    langs = args.langs.split(",")

    settings = Settings(models_dir=args.models_dir)
    text = load_text_tower(settings, args.tower)
    encoder = build_image_encoder(settings, text.tower.image_encoder)
    train = load_dataset(args.data, "train", langs)
    texts: dict[str, list[str]] = defaultdict(list)
    for caption in train.captions:
        texts[caption.lang].append(caption.text)
    vocabularies, frequencies = build_vocabularies(texts, text, args.cache_dir, args.min_count, 5000)
    lexicons = {lang: Lexicon.read(args.lexicons / f"en-{lang}.tsv") for lang in langs}

    dev = load_dataset(args.data, "dev", ["en"])
    english: dict[str, list[str]] = defaultdict(list)
    for caption in dev.captions:
        english[caption.image].append(caption.text)
    lines = [
        f"Command: `{shlex.join(['python', 'benchmarks/tagging_gallery.py', *(argv or sys.argv[1:])])}`; "
        f"W1 = {args.w1}, W2 = {args.w2}; dev photos whose English captions contain the word.",
        "",
        "| word | photo | English caption | "
        + " | ".join(f"{lang} contextual | {lang} lexicon" for lang in langs)
        + " |",
        "| --- | --- | --- | " + " | ".join("--- | ---" for _ in langs) + " |",
    ]
    for word in args.words.split(","):
        photos = [i for i in dev.images if any(word in tokenize(c) for c in english[i])][: args.per_word]
        if not photos:
            continue
        features = image_features(encoder, [dev.image_path(p) for p in photos], args.cache_dir, desc=word)
        vectors = text.tower.image_space.apply(features)
        source = embed_cached(text, [word], args.cache_dir)
        for photo, vector in zip(photos, vectors, strict=True):
            sentence = next(c for c in english[photo] if word in tokenize(c))
            cells = []
            for lang in langs:
                vocab = vocabularies[lang]
                ranked = contextual_tags(vector, source, vocab.vectors, args.w1, args.w2)
                translated = lexicons[lang].translate(word, frequencies[lang]) or "—"
                cells += [f"**{vocab.words[ranked[0].target]}**", translated]
            lines.append(f"| {word} | `{photo}` | {sentence} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        atomic_write_bytes(args.out, table.encode())


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
