"""How often tags by concept showed what the shipped lexicon now leaves out (proper names, and what tags never say:
training/concepts/build.py), tagging with an earlier lexicon:

    git archive a6a0fb2 indexer/assets/concepts | tar -x -C /tmp/before
    PYTHONPATH=. .venv/bin/python benchmarks/lexicon_left_out.py --before /tmp/before/indexer/assets/concepts

Each photo of the m30k-f8k **train** split (people, mostly) and of ``imagenet-samples`` (dev) is tagged by concept
with the ``--before`` lexicon (k = 5, the service's weights) in English and the 13 languages of the dev names. An
answer counts when one of its 5 tags is a concept that the shipped lexicon does not have, by why it is left out:
``never`` (:func:`training.concepts.build.never_tagged`, read from ``--wordnet``) or ``proper`` (a proper name).
Writes OUT.json and OUT.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from report_files import write_report

from indexer.asset_paths import SHIPPED_CONCEPTS
from indexer.concepts import ConceptLexicon
from indexer.images import load_image
from indexer.query import load_models
from indexer.settings import Settings, TaggingSettings
from indexer.tagging.loading import load_tagger
from training.concepts.build import never_tagged, read_english

LANGS = ("en", "fr", "de", "ja", "ar", "ko", "zh", "ru", "es", "pt", "it", "pl", "tr", "cs")
K = 5


def photo_sets(m30k: Path, samples: Path) -> dict[str, list[Path]]:
    train = (m30k / "splits" / "train.txt").read_text(encoding="utf-8").split()
    dev = [json.loads(line)["image"] for line in (samples / "images.jsonl").read_text(encoding="utf-8").splitlines()]
    return {
        "m30k-f8k train": [m30k / "images" / name for name in train],
        "imagenet-samples (dev)": [samples / "images" / name for name in dev if name],
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    settings = Settings(home=args.home, tagging=TaggingSettings(lexicon_dir=args.before))
    models = load_models(settings)
    concepts = load_tagger(models, settings).concepts
    assert concepts is not None
    shipped_lexicon = ConceptLexicon.load(SHIPPED_CONCEPTS)
    shipped = set(shipped_lexicon.ids)
    never = never_tagged(read_english(args.wordnet))
    out: dict[str, Any] = {}
    for name, photos in photo_sets(args.m30k, args.samples).items():
        answers = {"never": 0, "proper": 0}
        photos_with = {"never": 0, "proper": 0}
        shown: dict[str, Counter[str]] = {"never": Counter(), "proper": Counter()}
        for start in range(0, len(photos), 32):
            features = models.image_encoder.predict([load_image(p) for p in photos[start : start + 32]])
            for probabilities, vector in zip(
                models.image_encoder.classify(features), models.image_space.apply(features), strict=True
            ):
                tags = concepts.tag(probabilities, vector, LANGS, K)
                seen: set[str] = set()
                for lang in LANGS:
                    kinds = set()
                    for tag in tags[lang]:
                        if tag.concept not in shipped:
                            kind = "never" if tag.concept in never else "proper"
                            kinds.add(kind)
                            shown[kind][tag.english] += 1
                    for kind in kinds:
                        answers[kind] += 1
                    seen |= kinds
                for kind in seen:
                    photos_with[kind] += 1
        out[name] = {
            "photos": len(photos),
            "answers": len(photos) * len(LANGS),
            **{
                kind: {"answers": answers[kind], "photos": photos_with[kind], "most_shown": shown[kind].most_common(12)}
                for kind in ("never", "proper")
            },
        }
    return {
        "command": "PYTHONPATH=. .venv/bin/python benchmarks/lexicon_left_out.py " + " ".join(sys.argv[1:]),
        "before": concepts.lexicon.digest[:16],
        "shipped": shipped_lexicon.digest[:16],
        "langs": list(LANGS),
        "k": K,
        "seconds": round(time.perf_counter() - started, 1),
        "sets": out,
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"Command: `{result['command']}`; tags by concept (k = {result['k']}) with lexicon `{result['before']}` in "
        f"{len(result['langs'])} languages; what the shipped lexicon `{result['shipped']}` leaves out.",
        "",
        "| photos | answers | with a concept tags never say | photos | with a proper name | photos |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, row in result["sets"].items():
        lines.append(
            f"| {name} ({row['photos']:,}) | {row['answers']:,} | {row['never']['answers']:,} | "
            f"{row['never']['photos']:,} | {row['proper']['answers']:,} | {row['proper']['photos']:,} |"
        )
    lines.append("")
    for name, row in result["sets"].items():
        for kind, label in (("never", "tags never say"), ("proper", "proper names")):
            shown = ", ".join(f"{word} {count}" for word, count in row[kind]["most_shown"])
            lines.append(f"- {name}, {label}, most shown (tags): {shown}")
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="An earlier lexicon folder")
    parser.add_argument("--wordnet", type=Path, default=Path("../shared/data/concepts"))
    parser.add_argument("--m30k", type=Path, default=Path("../shared/data/m30k-f8k"))
    parser.add_argument("--samples", type=Path, default=Path("../shared/data/imagenet-samples"))
    parser.add_argument("--home", type=Path, default=Path("var"))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/lexicon_left_out"))
    args = parser.parse_args(argv)
    result = measure(args)
    write_report(args.out, result, markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
