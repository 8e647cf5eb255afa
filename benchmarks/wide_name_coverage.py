"""How many of the wide dev set's names the student's training texts hold verbatim (measurement only).

For each language of ``imagenet-labels``: the share of its class names (lower-case) that are exactly one of the
translated class names the concept term trains on, with the first rounds' texts (``pseudo_class_names``: one
English name a class, word by word) and the fourth round's (``name_texts``: every WordNet name, word orders,
compounds), that are one dictionary word (a translation in the MUSE lexicon), and whose every word is a dictionary
word. The names are read here only to count; nothing trains on them.

``--muse-check K`` also measures a filter that was considered for the fourth round's texts and left out: keep a
text in mUSE's languages only when mUSE (the label bridge's reading, no training) puts its class among the K
nearest English class names. It prints the share of all texts the filter keeps and the share of the texts that are
a human name of their class it keeps::

    .venv/bin/python benchmarks/wide_name_coverage.py --muse-check 10 --md docs/results/student/wide-name-coverage.md
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from indexer.encoders.imagenet import imagenet_class_names
from training.student.name_texts import class_lemmas, name_texts
from training.student.words import PseudoNames, pseudo_class_names, read_lexicons

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def by_language(names: PseudoNames) -> dict[str, set[str]]:
    texts: dict[str, set[str]] = defaultdict(set)
    for text, lang in zip(names.text, names.lang, strict=True):
        texts[lang].add(text.lower())
    return texts


def muse_check(names: PseudoNames, human: dict[str, set[str]], top_k: int) -> str:
    """The mUSE filter's effect on ``names`` (texts in mUSE's languages only)."""
    from app.cli.settings_cli import read_settings
    from indexer.encoders import build_text_encoder
    from training.data.features import text_embeddings
    from training.student.muse_teacher import MUSE_TEACHER_LANGS

    settings = read_settings()
    muse = build_text_encoder(settings, "muse")
    muse.load()
    rows = [i for i, lang in enumerate(names.lang) if lang in MUSE_TEACHER_LANGS]
    queries = text_embeddings(muse, [names.text[i] for i in rows], settings.resolved_cache_dir, desc="name texts")
    english, owner = [], []
    clean = imagenet_class_names()
    for label, lemmas in enumerate(class_lemmas()):
        for name in dict.fromkeys([clean[label], *lemmas]):
            english.append(name)
            owner.append(label)
    vectors = text_embeddings(muse, english, settings.resolved_cache_dir, desc="English names")
    cosines = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ).T
    owners = np.array(owner)
    per_class = np.stack([cosines[:, owners == label].max(axis=1) for label in range(1000)], axis=1)
    labels = names.label[rows]
    own = per_class[np.arange(len(rows)), labels]
    ranks = (per_class > own[:, None]).sum(axis=1)
    is_human = np.array([names.text[i].lower() in human.get(names.lang[i], set()) for i in rows])
    kept = float(np.mean(ranks < top_k))
    kept_human = float(np.mean(ranks[is_human] < top_k))
    return (
        f"mUSE check (class among the {top_k} nearest English names), over the {len(rows)} fourth-round texts in "
        f"mUSE's languages: keeps {kept:.3f} of them, and {kept_human:.3f} of the {int(is_human.sum())} that are a "
        "human name of their class: it would drop correct names more often than the rest, so it is not used."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lexicons", type=Path, default=DATA / "lexicons")
    parser.add_argument("--labels", type=Path, default=DATA / "imagenet-labels" / "babel-imagenet.json")
    parser.add_argument("--muse-check", type=int, default=0, metavar="K")
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args()
    tables = read_lexicons(args.lexicons)
    first = by_language(pseudo_class_names(tables, imagenet_class_names(), seed=0))  # the recipe's seed
    fourth_names = name_texts(tables, class_lemmas(), seed=0)
    fourth = by_language(fourth_names)
    words: dict[str, set[str]] = defaultdict(set)
    for lang, table in tables.items():
        for translations in table.values():
            words[lang].update(t.lower() for t in translations)
    names = json.loads(args.labels.read_text(encoding="utf-8"))
    human = {code.lower(): {text.lower() for text in texts} for code, (_classes, texts) in names.items()}
    lines = [
        "| lang | names | a training class name (English names) | (every WordNet name) | a dictionary word | every word in the dictionary |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for code, (_classes, texts) in sorted(names.items()):
        lang = code.lower()
        if lang == "en" or lang not in tables:
            continue
        lowered = [text.lower() for text in texts]
        count = len(lowered)
        old = sum(text in first[lang] for text in lowered) / count
        new = sum(text in fourth[lang] for text in lowered) / count
        word = sum(text in words[lang] for text in lowered) / count
        every = sum(all(part in words[lang] for part in text.split()) for text in lowered) / count
        lines.append(f"| {lang} | {count} | {old:.3f} | {new:.3f} | {word:.3f} | {every:.3f} |")
    table = "\n".join(lines)
    if args.muse_check:
        table += "\n\n" + muse_check(fourth_names, human, args.muse_check)
    print(table)
    if args.md:
        flags = f"--muse-check {args.muse_check} " if args.muse_check else ""
        command = f"`.venv/bin/python benchmarks/wide_name_coverage.py {flags}--md {args.md}`"
        args.md.write_text(f"Command: {command}\n\n{table}\n", encoding="utf-8")


if __name__ == "__main__":
    main()
