"""Choose the concept tagger's weights on training photos, never on the dev set:

    PYTHONPATH=. .venv/bin/python benchmarks/tags_by_concept_tuning.py --out benchmarks/tags_by_concept_tuning

On ``--photos`` random m30k-f8k **train** photos (seed 0), the English top-5 tags by concept are scored by how
many of them have a word of an English lemma among the words of the photo's English captions (precision@5;
plural "s" stripped), over a grid of ``concept_weight`` (the standardised image–name similarity), ``concept_
generality`` (what a concept loses per share of the ImageNet classes below it) and ``concept_frequency`` (the
standardised log corpus count). The best point is the default of ``POLYGLOT_TAG_CONCEPT_*``. Writes OUT.json
and OUT.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from indexer.images import load_image
from indexer.query import load_models
from indexer.settings import Settings
from indexer.tagging.concepts import ConceptTagger
from indexer.tagging.loading import load_tagger

K = 5
WEIGHTS = (0.08, 0.15, 0.3)
GENERALITY = (0.5, 1.0, 2.0)
FREQUENCY = (0.0, 0.05, 0.1)


def words(text: str) -> set[str]:
    found = re.findall(r"[a-z]+", text.lower())
    return {*found, *(w.rstrip("s") for w in found)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    settings = Settings(models_dir=args.models_dir, cache_dir=args.cache_dir, home=args.home)
    models = load_models(settings)
    base = load_tagger(models, settings).concepts
    assert base is not None
    ids = (args.data / "splits" / "train.txt").read_text(encoding="utf-8").split()
    rng = np.random.default_rng(0)
    chosen = [ids[i] for i in sorted(rng.choice(len(ids), args.photos, replace=False))]
    captions: dict[str, set[str]] = defaultdict(set)
    wanted = set(chosen)
    with (args.data / "captions.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["lang"] == "en" and row["image"] in wanted:
                captions[row["image"]] |= words(row["text"])
    features = np.concatenate(
        [
            models.image_encoder.predict([load_image(args.data / "images" / i) for i in chosen[s : s + 16]])
            for s in range(0, len(chosen), 16)
        ]
    )
    probabilities = models.image_encoder.classify(features)
    vectors = models.image_space.apply(features)
    lexicon = base.lexicon
    lemma_words = {c: set().union(*(words(lemma) for lemma in lexicon.concept(c).lemmas[:3])) for c in lexicon.ids}
    grid = []
    for weight, generality, frequency in itertools.product(WEIGHTS, GENERALITY, FREQUENCY):
        tagger = ConceptTagger(
            lexicon, base.vectors, models.image_encoder.class_names, None, weight, generality, frequency
        )
        precision = []
        for image, p, v in zip(chosen, probabilities, vectors, strict=True):
            tags = tagger.tag(p, v, ["en"], K)["en"]
            precision.append(np.mean([bool(lemma_words[t.concept] & captions[image]) for t in tags]))
        grid.append(
            {"weight": weight, "generality": generality, "frequency": frequency, "precision": float(np.mean(precision))}
        )
    grid.sort(key=lambda row: -row["precision"])
    return {
        "command": "PYTHONPATH=. .venv/bin/python benchmarks/tags_by_concept_tuning.py " + " ".join(sys.argv[1:]),
        "photos": len(chosen),
        "split": "train",
        "text_side": models.text.fingerprint,
        "lexicon": lexicon.digest[:16],
        "seconds": round(time.perf_counter() - started, 1),
        "grid": grid,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/m30k-f8k"))
    parser.add_argument("--photos", type=int, default=600)
    parser.add_argument("--models-dir", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--home", type=Path, default=Path("var"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/tags_by_concept_tuning"))
    args = parser.parse_args(argv)
    result = measure(args)
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    lines = [
        f"Command: `{result['command']}`; {result['photos']} m30k-f8k train photos, text side "
        f"`{result['text_side']}`, lexicon `{result['lexicon']}`. English top-5 tags by concept, precision@5 against "
        "the words of each photo's English captions (best first).",
        "",
        "| concept_weight | concept_generality | concept_frequency | precision@5 |",
        "| ---: | ---: | ---: | ---: |",
        *(f"| {r['weight']} | {r['generality']} | {r['frequency']} | {r['precision']:.3f} |" for r in result["grid"]),
        "",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[:12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
