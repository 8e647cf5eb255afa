"""How many of the wide dev set's names the student's training texts hold verbatim (measurement only).

For each language of ``imagenet-labels``: the share of its class names (lower-case) that are exactly one of the
word-by-word translated class names the concept term trains on (``pseudo_class_names``), that are one dictionary
word (a translation in the MUSE lexicon), and whose every word is a dictionary word. The names are read here only
to count; nothing trains on them::

    .venv/bin/python benchmarks/wide_name_coverage.py --md docs/results/student/wide-name-coverage.md
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from indexer.encoders.imagenet import imagenet_class_names
from training.student.words import pseudo_class_names, read_lexicons

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lexicons", type=Path, default=DATA / "lexicons")
    parser.add_argument("--labels", type=Path, default=DATA / "imagenet-labels" / "babel-imagenet.json")
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args()
    tables = read_lexicons(args.lexicons)
    pseudo = pseudo_class_names(tables, imagenet_class_names(), seed=0)  # the recipe's seed
    trained: dict[str, set[str]] = defaultdict(set)
    for text, lang in zip(pseudo.text, pseudo.lang, strict=True):
        trained[lang].add(text.lower())
    words: dict[str, set[str]] = defaultdict(set)
    for lang, table in tables.items():
        for translations in table.values():
            words[lang].update(t.lower() for t in translations)
    names = json.loads(args.labels.read_text(encoding="utf-8"))
    lines = [
        "| lang | names | a training class name | a dictionary word | every word in the dictionary |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for code, (_classes, texts) in sorted(names.items()):
        lang = code.lower()
        if lang == "en" or lang not in tables:
            continue
        lowered = [text.lower() for text in texts]
        count = len(lowered)
        exact = sum(text in trained[lang] for text in lowered) / count
        word = sum(text in words[lang] for text in lowered) / count
        every = sum(all(part in words[lang] for part in text.split()) for text in lowered) / count
        lines.append(f"| {lang} | {count} | {exact:.3f} | {word:.3f} | {every:.3f} |")
    table = "\n".join(lines)
    print(table)
    if args.md:
        command = "`.venv/bin/python benchmarks/wide_name_coverage.py --md " + str(args.md) + "`"
        args.md.write_text(f"Command: {command}\n\n{table}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
