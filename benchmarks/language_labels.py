"""When a search answer may name the query's language (issue 36, ``indexer.query.pipeline.confident_language``):
how often py3langid's best guess is right, by its probability, for single words and for short sentences.

Words: ``--words`` per language from the shared bilingual lexicons (``../shared/data/lexicons/en-XX.tsv``: the
``XX`` side, alphabetic, 3+ letters, differing from the English word; a few English ones too). Sentences: the
hand-written queries of ``benchmarks/queries/`` and a few of each served language below. The detector is
restricted to the student's languages (XLM-R's ∩ py3langid's), as the service restricts it. Deterministic (seeded
sample). Run from the repository root::

    .venv/bin/python benchmarks/language_labels.py --out benchmarks/language_labels.md
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from indexer.encoders.languages import XLMR_100
from indexer.query.pipeline import CONFIDENT_TEXT, CONFIDENT_WORD, detect_language

LEXICONS = Path(__file__).resolve().parents[2] / "shared" / "data" / "lexicons"
QUERIES = Path(__file__).resolve().parent / "queries"
SENTENCES = {
    "en": ["a dog on the beach", "two children playing football in a park", "a man riding a bike"],
    "de": ["Ein Hund rennt am Strand", "Zwei Kinder spielen im Park", "Ein Mann fährt Fahrrad"],
    "fr": ["un chien sur la plage", "deux enfants jouent au parc", "la plage"],
    "es": ["un perro en la playa", "dos niños juegan en el parque"],
    "pt": ["um cão na praia", "duas crianças brincam no parque"],
    "it": ["un cane sulla spiaggia"],
    "cs": ["pes na pláži", "dvě děti si hrají v parku"],
    "ja": ["浜辺の犬"],
    "zh": ["海滩上的狗"],
}
THRESHOLDS = (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def words(per_language: int) -> list[tuple[str, str]]:
    rng = random.Random(0)
    out: list[tuple[str, str]] = []
    for path in sorted(LEXICONS.glob("en-*.tsv")):
        lang = path.stem.split("-", 1)[1]
        pairs = [line.rstrip("\n").split("\t") for line in path.open(encoding="utf-8")]
        good = [p for p in pairs if len(p) == 2 and p[1].isalpha() and len(p[1]) >= 3 and p[0] != p[1]]
        out += [(lang, word) for _, word in rng.sample(good, min(per_language, len(good)))]
        out += [("en", english) for english, _ in rng.sample(good, 3)]
    return out


def sentences() -> list[tuple[str, str]]:
    out = [(lang, text) for lang, texts in SENTENCES.items() for text in texts]
    for path in sorted(QUERIES.glob("*.txt")):
        out += [(path.stem, line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return out


def table(name: str, samples: list[tuple[str, str]], chosen: float) -> list[str]:
    results = [(lang, *detect_language(text, XLMR_100)) for lang, text in samples]
    lines = [
        f"**{name}** ({len(results)}; right at any probability: {sum(r[0] == r[1] for r in results)})",
        "",
        "| probability ≥ | labelled | share | right among labelled |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for bar in THRESHOLDS:
        shown = [r for r in results if r[2] is not None and r[2] >= bar]
        right = sum(r[0] == r[1] for r in shown)
        mark = " (used)" if bar == chosen else ""
        precision = f"{right / len(shown):.3f}" if shown else "–"
        lines.append(f"| {bar}{mark} | {len(shown)} | {len(shown) / len(results):.2f} | {precision} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=30, help="words per language")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    lines = [
        f"# Language labels (`{' '.join(['benchmarks/language_labels.py', *sys.argv[1:]])}`)",
        "",
        "py3langid restricted to the student's languages; `right` = its best guess is the sample's language.",
        "",
        *table("Single words", words(args.words), CONFIDENT_WORD),
        *table("Sentences", sentences(), CONFIDENT_TEXT),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
