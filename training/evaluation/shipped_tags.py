"""How well do the shipped tag vocabularies name what a photo shows? One command, rerun after a new student:

    .venv/bin/python -m training.evaluation.shipped_tags --out docs/tagging/shipped

On the 700 photos of ``../shared/data/imagenet-samples`` (one per ImageNet class), each photo is tagged as the
service tags it on a fresh install (the served models, ImageNet source tags, the shipped vocabularies, ``k = 5``),
in every language of ``../shared/data/imagenet-labels`` at once. A photo counts as a **hit** in a language when a
word of its class's name in that language is among its 5 tags. The names are Babel-ImageNet's (measurement only:
nothing else reads them); English is measured twice, against the ImageNet class names (``en``: what the file names
say, and the English the source tags come from, so it is partly circular) and against Babel-ImageNet's English
lemmas (``en-babel``, e.g. "Tinca tinca" for tench). A language's rate is over the photos whose class it names.

Words match (:func:`label_hit`): the class name's content words (stop words and glosses in parentheses dropped,
stress marks removed) against the tags' words, equal or one the other plus one inflection ending
(:func:`training.evaluation.tag_metrics.related`); Chinese and Japanese, written without spaces, match when a tag of
at least two characters is part of the name or the name part of a tag. The table's second rate ("with compound
parts", :func:`compound_hit`) also counts a tag that is a part of a hyphenated name word or the head a compound
name word ends with ("requin" of "requin-tigre", "Schildkröte" of "Lederschildkröte"): what Chinese, Japanese and
English (by its spaces) already get; the first rate is the issue's definition, unchanged.

``--before`` also measures what a user had before vocabularies shipped: vocabularies built from the shared
captions as the README said (``polyglot tags vocab build --lang XX captions.jsonl``: content words seen twice, at
most 5,000) for the caption languages of ``m30k-f8k``, ranked as before (source order, no near-synonym rule).

Writes ``OUT/hits.json``, ``OUT/hits.md`` (the table) and ``--gallery`` (default ``docs/tagging/gallery.md``: 10 photos × 6
languages, the photos every 70th in file order).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import shlex
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.images import load_image
from indexer.query import load_models
from indexer.settings import Settings, TaggingSettings
from indexer.tagging.cached import embed_cached
from indexer.tagging.loading import load_tagger
from indexer.tagging.source_tags import clean_class_name
from indexer.tagging.tagger import Tagger
from indexer.tagging.text import content_words, count_content_words, tokenize
from indexer.tagging.vocabulary import build_vocabulary
from indexer.tower import TextEmbedder
from training.evaluation.tag_metrics import related

K = 5
GALLERY_LANGS = ("en", "de", "fr", "es", "ru", "zh")
GALLERY_PHOTOS = 10
BEFORE_LANGS = ("de", "fr", "cs", "pt")
_NO_SPACES = ("zh", "ja")
_STRESS = dict.fromkeys(map(ord, "\u0301\u0300"))


def label_words(label: str, lang: str) -> list[str]:
    text = re.sub(r"\([^)]*\)", " ", unicodedata.normalize("NFC", label)).translate(_STRESS)
    words = content_words(text, lang) or tokenize(text)
    return words


def label_hit(label: str, tags: list[str], lang: str, compounds: bool = False) -> bool:
    """Does a word of the class name ``label`` occur among ``tags`` (see the module docstring)? With ``compounds``,
    also a part of a hyphenated word or a compound's head (:func:`compound_hit`)."""
    words = label_words(label, lang)
    if lang in _NO_SPACES:
        name = "".join(words)
        for tag in tags:
            piece = "".join(tokenize(tag))
            if piece and (piece == name or (len(piece) >= 2 and piece in name) or (len(name) >= 2 and name in piece)):
                return True
        return False
    tag_words = [t for tag in tags for t in tokenize(tag.translate(_STRESS))]
    return any(related(w, t) for w in words for t in tag_words) or (compounds and compound_hit(words, tag_words, lang))


COMPOUND_HEAD = 4  # letters (Hangul: syllables, 2) a tag word needs to count as the head of a longer name word


def compound_hit(words: list[str], tag_words: list[str], lang: str) -> bool:
    """The second column's rule: a tag word is a part of a hyphenated name word ("requin" of "requin-tigre",
    "пауки" of "пауки-волки") or ends a compound name word ("Schildkröte" of "Lederschildkröte", 상어 of 뱀상어).
    Chinese and Japanese already match a tag inside the name; this gives languages that write compounds as one
    word (German, Korean) or with hyphens the same, as English gets "shark" of "tiger shark" from its spaces."""
    shortest = 2 if lang == "ko" else COMPOUND_HEAD
    parts = [part for word in words for part in word.split("-") if part]
    if any(related(p, t) for p in parts for t in tag_words):
        return True
    return any(len(t) >= shortest and w != t and w.endswith(t) for w in [*words, *parts] for t in tag_words)


def read_samples(folder: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (folder / "images.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return rows


def class_labels(labels_path: Path, english_names: list[str]) -> dict[str, dict[int, str]]:
    """{lang: {class index: name}}: Babel-ImageNet's languages (EN as ``en-babel``) and the English class names."""
    babel = json.loads(labels_path.read_text(encoding="utf-8"))
    out: dict[str, dict[int, str]] = {"en": dict(enumerate(english_names))}
    for key, (indices, names) in babel.items():
        lang = "en-babel" if key == "EN" else key.lower()
        out[lang] = {int(i): str(n) for i, n in zip(indices, names, strict=True)}
    return out


def before_tagger(tagger: Tagger, data: Path, settings: Settings, langs: list[str]) -> Tagger:
    """The tagger a user had before: caption-built vocabularies, source order, no near-synonym rule."""
    from training.data.dataset import load_dataset

    captions = load_dataset(data, "train", langs).captions
    text: TextEmbedder = tagger.text  # type: ignore[assignment]  # load_tagger's: the served TextEmbedder
    vocabularies = {}
    for lang in langs:
        forms: dict[str, Counter[str]] = {}
        counts = count_content_words([c.text for c in captions if c.lang == lang], lang, forms)
        vocabularies[lang] = build_vocabulary(
            lang,
            counts,
            partial(embed_cached, text, cache_dir=settings.resolved_cache_dir, lang=lang),
            batch_size=1024,
            forms=forms,
        )
    before = Tagger(
        tagger.image_encoder,
        tagger.text,
        tagger.image_space,
        vocabularies,
        TaggingSettings(source="imagenet", max_similarity=1.0),
        fingerprint=tagger.fingerprint,
    )
    names = list(dict.fromkeys(n for n in map(clean_class_name, tagger.image_encoder.class_names) if n))
    before.remember_sources(names, embed_cached(text, names, settings.resolved_cache_dir))
    return before


def measure(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    settings = Settings(models_dir=args.models_dir, cache_dir=args.cache_dir, home=args.home)
    settings = settings.model_copy(update={"tagging": TaggingSettings(source="imagenet")})
    models = load_models(settings)
    tagger = load_tagger(models, settings)
    samples = read_samples(args.samples)[: args.limit or None]
    labels = class_labels(args.labels, [clean_class_name(n) for n in models.image_encoder.class_names])
    if args.langs:  # a subset (a lighter run); English stays: it is the reference and the blend's source
        wanted = {"en", "en-babel", *args.langs.split(",")}
        labels = {lang: names for lang, names in labels.items() if lang in wanted}
    langs = [lang for lang in labels if lang != "en-babel"]
    for lang in tqdm(langs, desc="vocabularies", disable=args.quiet):
        tagger.vocabulary(lang)  # embeds a language the first time (cached by fingerprint)
    before_langs = [lang for lang in BEFORE_LANGS if lang in labels]
    before = before_tagger(tagger, args.data, settings, before_langs) if args.before and before_langs else None
    hits: dict[str, list[int]] = defaultdict(list)
    compound_hits: dict[str, list[int]] = defaultdict(list)
    before_hits: dict[str, list[int]] = defaultdict(list)
    answers: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in tqdm(samples, desc="photos", disable=args.quiet):
        features = models.image_encoder.predict([load_image(args.samples / "images" / row["image"])])[0]
        result = tagger.tag_features(features, langs, K)
        cls = int(row["class_index"])
        answers[row["image"]] = {lang: [t.as_dict() for t in tags] for lang, tags in result.items()}
        for lang, names in labels.items():
            if cls in names:
                shown = [t.tag for t in result["en" if lang == "en-babel" else lang]]
                hits[lang].append(int(label_hit(names[cls], shown, lang.split("-")[0])))
                compound_hits[lang].append(int(label_hit(names[cls], shown, lang.split("-")[0], compounds=True)))
        if before is not None:
            old = before.tag_features(features, before_langs, K)
            for lang, tags in old.items():
                if cls in labels[lang]:
                    before_hits[lang].append(int(label_hit(labels[lang][cls], [t.tag for t in tags], lang)))
    english = float(np.mean(hits["en"]))
    english_compounds = float(np.mean(compound_hits["en"]))
    table = {
        lang: {
            "photos": len(values),
            "hit_rate": round(float(np.mean(values)), 4),
            "vs_english": round(float(np.mean(values)) / english, 3) if english else None,
            "hit_rate_compounds": round(float(np.mean(compound_hits[lang])), 4),
            "vs_english_compounds": round(float(np.mean(compound_hits[lang])) / english_compounds, 3)
            if english_compounds
            else None,
            "vocabulary": len(tagger.vocabulary(lang.split("-")[0])),
            "before": round(float(np.mean(before_hits[lang])), 4) if before_hits.get(lang) else None,
        }
        for lang, values in hits.items()
    }
    return {
        "command": args.command,
        "k": K,
        "text_side": tagger.fingerprint,
        "text_encoder": models.text.encoder.name,
        "image_encoder": models.image_encoder.name,
        "photos": len(samples),
        "languages": table,
        "tags": answers,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": platform.platform(),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Command: `{report['command']}`; text side `{report['text_side']}` ({report['text_encoder']}), "
        f"{report['photos']} photos, k = {report['k']}, ImageNet source tags.",
        "",
        "| lang | photos named | hit rate (top 5) | × English | with compound parts | × English | vocabulary "
        "| before (caption-built) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for lang, row in report["languages"].items():
        before = "—" if row["before"] is None else f"{row['before']:.3f}"
        lines.append(
            f"| {lang} | {row['photos']} | {row['hit_rate']:.3f} | {row['vs_english']:.2f} "
            f"| {row['hit_rate_compounds']:.3f} | {row['vs_english_compounds']:.2f} | {row['vocabulary']} | {before} |"
        )
    return "\n".join(lines) + "\n"


def gallery_photos(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return samples[:: max(1, len(samples) // GALLERY_PHOTOS)][:GALLERY_PHOTOS]


def gallery(report: dict[str, Any], samples: list[dict[str, Any]]) -> str:
    chosen = gallery_photos(samples)
    head = "| photo | " + " | ".join(GALLERY_LANGS) + " |"
    lines = [
        "# Shipped tag vocabularies: 10 photos × 6 languages",
        "",
        f"Written by `{report['command']}` (text side `{report['text_side']}`): the 5 tags of each photo, best "
        "first, as `POST /tag?k=5` answers on a fresh install (ImageNet source tags, shipped vocabularies). Photos: "
        "every 70th of `../shared/data/imagenet-samples` (file name = wnid + English class). Copied from the "
        "command's output, good and bad.",
        "",
        head,
        "| --- |" + " --- |" * len(GALLERY_LANGS),
    ]
    for row in chosen:
        tags = report["tags"][row["image"]]
        cells = [", ".join(t["tag"] for t in tags.get(lang, [])) for lang in GALLERY_LANGS]
        lines.append(f"| `{row['image']}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    shared = Path("../shared/data")
    parser.add_argument("--samples", type=Path, default=shared / "imagenet-samples")
    parser.add_argument("--labels", type=Path, default=shared / "imagenet-labels" / "babel-imagenet.json")
    parser.add_argument("--data", type=Path, default=shared / "m30k-f8k", help="captions for --before")
    parser.add_argument("--home", type=Path, default=Path("var"))
    parser.add_argument("--models-dir", type=Path, default=Path("var/models"))
    parser.add_argument("--cache-dir", type=Path, default=Path("var/cache"))
    parser.add_argument("--before", action="store_true", help="also measure caption-built vocabularies (de fr cs pt)")
    parser.add_argument("--out", type=Path, default=Path("docs/tagging/shipped"))
    parser.add_argument("--gallery", type=Path, default=Path("docs/tagging/gallery.md"))
    parser.add_argument("--langs", default="", help="only these languages, comma-separated (en is always measured)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N photos (a quick look; 0: all)")
    parser.add_argument("--quiet", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    args.command = shlex.join(["python", "-m", "training.evaluation.shipped_tags", *(argv or sys.argv[1:])])
    report = measure(args)
    table = markdown(report)
    print(table)
    samples = read_samples(args.samples)[: args.limit or None]  # the photos measured
    if args.gallery:
        atomic_write_bytes(args.gallery, gallery(report, samples).encode("utf-8"))
    shown = {row["image"] for row in gallery_photos(samples)}  # the JSON keeps the gallery's answers, not all 700
    report["tags"] = {image: tags for image, tags in report["tags"].items() if image in shown}
    atomic_write_json(args.out / "hits.json", report)
    atomic_write_bytes(args.out / "hits.md", table.encode("utf-8"))


if __name__ == "__main__":
    main()
