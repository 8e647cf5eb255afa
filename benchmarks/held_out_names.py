"""The training curve's ``names-XX`` check for any saved student, through the served (ONNX) text side: the
translated names a run held out (the recipe's seed and hold-out share), R@1 of their own class among the 1,000
classifier directions. ``--split class-languages`` (the default, from the fifth round on: in each language 5 % of
its classes, ``held_out_class_languages``) or ``--split classes`` (the fourth round's: 5 % of the classes in every
language, ``held_out_classes``). Used for the curve's step 0 (the student a run starts from, which never logged
this split)::

    .venv/bin/python benchmarks/held_out_names.py --split classes var/students/w12f6 var/students/w12n
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from app.cli.settings_cli import read_settings
from indexer.encoders import build_image_encoder
from indexer.query.models import load_text_tower
from training.losses.concept import class_prototypes
from training.student.name_texts import class_lemmas, held_out_class_languages, held_out_classes, name_texts
from training.student.run import WORD_CHECK_LANGS
from training.student.words import read_lexicons

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SPLITS = {"class-languages": held_out_class_languages, "classes": held_out_classes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("students", type=Path, nargs="+")
    parser.add_argument("--lexicons", type=Path, default=DATA / "lexicons")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--holdout", type=float, default=0.05)
    parser.add_argument("--split", choices=sorted(SPLITS), default="class-languages")
    args = parser.parse_args()
    generated = name_texts(read_lexicons(args.lexicons), class_lemmas(), seed=args.seed)
    _train, held = SPLITS[args.split](generated, args.holdout, seed=args.seed)
    settings = read_settings()
    image_encoder = build_image_encoder(settings)
    image_encoder.load()
    prototypes = class_prototypes(image_encoder)
    print("| student | " + " | ".join(f"names-{lang}" for lang in WORD_CHECK_LANGS) + " |")
    print("| --- |" + " ---: |" * len(WORD_CHECK_LANGS))
    for folder in args.students:
        model = load_text_tower(settings, folder)
        model.load()
        scores = []
        for lang in WORD_CHECK_LANGS:
            rows = [i for i, code in enumerate(held.lang) if code == lang]
            vectors = model.embed([held.text[i] for i in rows], lang)
            nearest = np.argmax(vectors @ prototypes.T, axis=1)
            scores.append(f"{np.mean(nearest == held.label[rows]):.3f}")
        print(f"| {folder.name} | " + " | ".join(scores) + " |")


if __name__ == "__main__":
    main()
