"""How high can a MUSE-built tag vocabulary take the top-5 class-word hit rate? No model: a photo of
``../shared/data/imagenet-samples`` can only be a hit (``training.evaluation.shipped_tags``) when some word a
vocabulary could hold for its class matches the class's Babel-ImageNet name. Per language, the share of photos
for which that is possible, with three vocabularies of growing size:

* ``shipped``: the class's own tags in the shipped vocabulary (tags listing the class name as a source);
* ``head, all senses``: every MUSE translation of the head (last) word of every WordNet name of the class, no
  checks and no cap;
* ``every word, all senses``: every MUSE translation of every word of every WordNet name of the class ("white" of
  "great white shark" too), no checks and no cap: an upper bound for any vocabulary built from these dictionaries
  and names.

The names only measure (they are read to count, never kept)::

    .venv/bin/python benchmarks/tag_vocab_ceiling.py --md docs/tagging/ceiling.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from indexer.asset_paths import SHIPPED_TAGS
from indexer.encoders.imagenet import imagenet_class_names
from indexer.tagging.shipped import ShippedWords
from indexer.tagging.source_tags import clean_class_name
from training.evaluation.shipped_tags import class_labels, label_hit, read_samples
from training.student.name_texts import class_lemmas
from training.tag_vocab.build import read_dictionary

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
LANGS = ("de", "fr", "es", "it", "pt", "cs", "pl", "ru", "tr", "ko", "ja", "zh")
TARGET = 0.75 * 0.983  # the 0.75 x English (English's measured hit rate)


def own_tags(lang: str) -> dict[str, list[str]]:
    """{English source word: the shipped tags that list it}."""
    sources: dict[str, list[str]] = {}
    for tag, *english in ShippedWords(lang, SHIPPED_TAGS / f"{lang}.tsv").rows:
        for word in english:
            sources.setdefault(word, []).append(tag)
    return sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--md", type=Path)
    args = parser.parse_args()
    samples = read_samples(args.data / "imagenet-samples")
    names = imagenet_class_names()
    labels = class_labels(args.data / "imagenet-labels" / "babel-imagenet.json", names)
    lemmas = class_lemmas()
    lines = [
        "| lang | photos named | shipped | head, all senses | every word, all senses | the target (0.75 × .983) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for lang in LANGS:
        dictionary = read_dictionary(args.data / "lexicons" / f"en-{lang}.tsv", lang)
        sources = own_tags(lang)
        named = [row for row in samples if row["class_index"] in labels[lang]]
        counts = [0, 0, 0]
        for row in named:
            index = row["class_index"]
            label = labels[lang][index]
            words = [name.lower().replace("-", " ").split() for name in lemmas[index]]
            heads = {t for w in words if w for t in dictionary.get(w[-1], [])}
            every = {t for w in words for part in w for t in dictionary.get(part, [])}
            for position, vocabulary in enumerate(
                (sources.get(clean_class_name(names[index]).lower(), []), heads, every)
            ):
                counts[position] += label_hit(label, sorted(vocabulary), lang)
        shares = [f"{count / len(named):.3f}" for count in counts]
        lines.append(f"| {lang} | {len(named)} | " + " | ".join(shares) + f" | {TARGET:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        args.md.write_text(f"Command: `.venv/bin/python benchmarks/tag_vocab_ceiling.py --md {args.md}`\n\n" + text)


if __name__ == "__main__":
    main()
