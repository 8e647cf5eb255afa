"""``POST /tag`` and ``POST /search/image`` latency through the real service (shipped tower, EfficientNet-Lite2, mUSE) with TestClient.

    .venv/bin/python benchmarks/tagging_latency.py --requests 40 --out docs/tagging/latency.json

A throw-away home folder gets fr and de vocabularies (train-split captions) and, with ``--captions``, the
train split's English captions in the caption index (for caption source tags). With ``--shipped`` it gets none: the
shipped vocabularies answer (a fresh install), embedded before timing (``--cache-dir`` keeps them for a rerun),
and 1, 2 and 3 languages are timed (fr; fr,de; fr,de,es), after tags by concept, the default source, in 1 and 4
languages (fr; fr,de,ja,ar). Then ``--requests`` sequential
uploads of dev photos (224×224 JPEG, ~20 KB) per configuration; the first ``--warmup`` are not timed.
Wall-clock per request, client included (in-process TestClient: no network, but the full ASGI stack).
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.atomic import atomic_write_json
from indexer.captions import Caption
from indexer.query import load_text_tower
from indexer.tagging.cached import embed_cached
from indexer.tagging.store import VocabularyStore
from indexer.tagging.text import count_content_words
from indexer.tagging.vocabulary import build_vocabulary
from training.data.dataset import load_dataset

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "m30k-f8k"


def prepare(home: Path, args: argparse.Namespace) -> ServiceSettings:
    if args.index is not None:  # a copy: the vocabularies are written beside the index
        shutil.copytree(args.index, home / "index")
    settings = ServiceSettings(
        home=home, cache_dir=args.cache_dir.resolve(), models_dir=args.models_dir.resolve(), tower_path=args.tower
    )
    if args.shipped:
        return settings
    text = load_text_tower(settings)
    train = load_dataset(args.data, "train", ["fr", "de", "en"])
    texts: dict[str, list[str]] = defaultdict(list)
    for caption in train.captions:
        texts[caption.lang].append(caption.text)
    store = VocabularyStore.beside_index(settings.resolved_index_dir)
    for lang in ("fr", "de"):
        vocab = build_vocabulary(
            lang,
            count_content_words(texts[lang], lang),
            partial(embed_cached, text, cache_dir=settings.resolved_cache_dir, lang=lang),
            min_count=3,
            info={"tower": text.fingerprint},
        )
        store.save(vocab)
    return settings


def run(args: argparse.Namespace) -> dict[str, Any]:
    dev = load_dataset(args.data, "dev", ["en"])
    per_config = args.requests + args.warmup
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        settings = prepare(Path(folder), args)
        app = create_app(settings)
        with TestClient(app) as client:
            engine = client.app.state.engine  # type: ignore[attr-defined]
            configs = [("fr", "imagenet"), ("fr,de", "imagenet")]
            if args.shipped:
                # Tags by concept (the default source): one ranking of the lexicon, named in every language asked.
                configs = [("fr", "concepts"), ("fr,de,ja,ar", "concepts"), *configs, ("fr,de,es", "imagenet")]
                for lang in ("fr", "de", "es"):  # the first request of a language embeds it: not what is timed
                    engine.components["tagger"].vocabulary(lang)
            if args.captions:
                english = train_english(args)
                engine.captions.add(english)
                configs += [("fr", "captions"), ("fr,de", "captions")]
            for position, (langs, source) in enumerate(configs):
                timings = []
                # Distinct photos for every configuration: the service caches CNN features by content hash, so
                # reusing a photo would time the cache, not the CNN.
                chosen = dev.images[position * per_config : (position + 1) * per_config]
                photos = [dev.image_path(i).read_bytes() for i in chosen]
                for number, data in enumerate(photos):
                    start = time.perf_counter()
                    response = client.post(
                        "/v1/tag",
                        params={"lang": langs, "k": 10, "source": source},
                        files={"file": ("photo.jpg", data, "image/jpeg")},
                    )
                    elapsed = time.perf_counter() - start
                    response.raise_for_status()
                    if number >= args.warmup:
                        timings.append(elapsed * 1000)
                timings.sort()
                results[f"lang={langs} source={source}"] = {
                    "requests": len(timings),
                    "p50_ms": round(statistics.median(timings), 1),
                    "p90_ms": round(timings[int(0.9 * (len(timings) - 1))], 1),
                    "example": response.json(),
                }
            # POST /search/image with new photos: decode + CNN + index search (of --index, or of an empty
            # index), the other request whose cost is image inference.
            start_at = len(configs) * per_config
            photos = [dev.image_path(i).read_bytes() for i in dev.images[start_at : start_at + per_config]]
            timings = []
            for number, data in enumerate(photos):
                start = time.perf_counter()
                response = client.post("/v1/search/image", files={"file": ("photo.jpg", data, "image/jpeg")})
                elapsed = time.perf_counter() - start
                response.raise_for_status()
                if number >= args.warmup:
                    timings.append(elapsed * 1000)
            timings.sort()
            results["search/image"] = {
                "index_images": len(engine.images),
                "requests": len(timings),
                "p50_ms": round(statistics.median(timings), 1),
                "p90_ms": round(timings[int(0.9 * (len(timings) - 1))], 1),
            }
    return results


def train_english(args: argparse.Namespace) -> list[Caption]:
    return load_dataset(args.data, "train", ["en"]).captions


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--tower", type=Path, default=None, help="default: the shipped tower")
    parser.add_argument("--models-dir", type=Path, default=Path("var/models"))
    parser.add_argument("--cache-dir", type=Path, default=Path("var/cache"))
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--captions", action="store_true", help="also time caption source tags")
    parser.add_argument("--shipped", action="store_true", help="no built vocabularies: the shipped ones")
    parser.add_argument("--index", type=Path, help="an index folder to search (copied), e.g. var/index")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "command": shlex.join(["python", "benchmarks/tagging_latency.py", *(argv or sys.argv[1:])]),
        "machine": platform.platform(),
        "load_average_start": os.getloadavg()[0],
        "results": run(args),
    }
    report["load_average_end"] = os.getloadavg()[0]
    for name, row in report["results"].items():
        print(f"{name}: p50 {row['p50_ms']} ms, p90 {row['p90_ms']} ms over {row['requests']} requests")
    if args.out:
        atomic_write_json(args.out, report)


if __name__ == "__main__":
    main()
