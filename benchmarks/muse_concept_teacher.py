"""How good a teacher mUSE would be for object names (issue 33, item 2), measured on the wide dev set.

mUSE v3 knows object names in its 16 languages (the zero-training label bridge finds 48–67 % of the non-English
ImageNet names in its top 10). To *teach* the student, its knowledge has to become a vector of the image space.
The soft-concept teacher does that with no training::

    teacher(text) = Σ_c softmax_c( cos(mUSE(text), mUSE(class name_c)) / τ ) · prototype_c

(``prototype_c``: the image classifier's direction of class ``c``, the concept term's target,
:func:`training.losses.concept.class_prototypes`). This script ranks the 700 wide-dev photos by that vector for
every name (the served image vectors: the student's image space), so its recalls say what the student could at
best learn from it, next to the student itself. τ is chosen on the English names only (they are training data;
the other languages' names stay measurement data). Nothing here trains anything::

    .venv/bin/python benchmarks/muse_concept_teacher.py --student indexer/assets/student \
        --json docs/results/student/muse-concept-teacher.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.encoders.imagenet import imagenet_class_names
from indexer.settings import Settings
from indexer.tower import TextTower
from training.data.features import text_embeddings
from training.data.prepared import prepare_split
from training.data.wide_dev import build_wide_dev
from training.evaluation.evaluate import evaluate_vectors
from training.losses.concept import class_prototypes
from training.student.muse_teacher import soft_concepts

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TEMPERATURES = (0.005, 0.01, 0.02, 0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--student", type=Path, default=Path("indexer/assets/student"))
    parser.add_argument("--samples", type=Path, default=DATA / "imagenet-samples")
    parser.add_argument("--labels", type=Path, default=DATA / "imagenet-labels")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    settings = Settings()
    cache = settings.resolved_cache_dir
    student = TextTower.from_pretrained(args.student)
    image = build_image_encoder(settings, student.image_encoder)
    muse = build_text_encoder(settings, "muse")
    data = build_wide_dev(args.samples, args.labels, cache / "wide-dev")
    split = prepare_split(data, "dev", None, image, muse, cache)
    image.load()
    names = text_embeddings(muse, imagenet_class_names(), cache, desc="class names")  # as training reads them
    prototypes = class_prototypes(image)
    images = student.image_space.apply(split.image_features)

    by_temperature = {}
    for temperature in TEMPERATURES:
        texts = soft_concepts(split.text_embeddings, names, prototypes, temperature)
        english = evaluate_vectors(images, texts, split, ["en"], with_c2c=False).report["languages"]["en"]
        by_temperature[temperature] = english["t2i"]["r10"] + english["t2i"]["r1"]
    temperature = max(by_temperature, key=by_temperature.__getitem__)
    texts = soft_concepts(split.text_embeddings, names, prototypes, temperature)
    report = evaluate_vectors(images, texts, split, with_c2c=False).report
    report["temperature"] = temperature
    report["english_r1_plus_r10_by_temperature"] = by_temperature
    print(f"τ = {temperature} (chosen on English: {by_temperature})")
    for lang, block in sorted(report["languages"].items()):
        print(f"{lang}: t2i R@10 {block['t2i']['r10']:.3f}  R@1 {block['t2i']['r1']:.3f}  ({block['queries']} names)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
