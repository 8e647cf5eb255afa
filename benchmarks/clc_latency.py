"""Latency cost of cross-lingual consistency: one client, one query at a time through the service's query pipeline
(``QueryPipeline.search_texts``, as ``/search`` calls it, query cache off: every query is new) on the 6,993-photo
index, with the served text side (the shipped student unless POLYGLOT_TOWER_PATH says otherwise), one inference thread.

Queries: dev captions, ``--per-lang`` distinct ones per language (en/de/fr/cs/pt). Reported: p50/p95/mean ms per
configuration and language, with the load average (the machine is shared: read the numbers relative to each
other, taken minutes apart in the same run)::

    POLYGLOT_INDEX_DIR=var/index .venv/bin/python benchmarks/clc_latency.py --lexicons ../shared/data/lexicons \\
        --translation-corpus ../shared/data/m30k-text --classifier retrieval=var/clc/retrieval \\
        --classifier gloss=var/clc/gloss --json docs/results/r15/latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from indexer.caption_records import iter_captions
from indexer.image_index import ImageIndex
from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.settings import Settings
from training.clc.consistency import ClcClassifier
from training.translation.factory import load_translator

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LANGS = ("en", "de", "fr", "cs", "pt")


def dev_queries(per_lang: int, seed: int = 0) -> list[tuple[str, str]]:
    dev = set((DATA / "m30k-f8k" / "splits" / "dev.txt").read_text().split())
    texts: dict[str, dict[str, None]] = {lang: {} for lang in LANGS}
    for caption in iter_captions(DATA / "m30k-f8k" / "captions.jsonl", LANGS):
        if caption.image in dev:
            texts[caption.lang].setdefault(caption.text)
    rng = random.Random(seed)
    return [(text, lang) for lang in LANGS for text in rng.sample(sorted(texts[lang]), per_lang)]


def timings(pipeline: QueryPipeline, index: ImageIndex, queries: list[tuple[str, str]], clc: Any) -> dict[str, Any]:
    per_lang: dict[str, list[float]] = {}
    for text, lang in queries[:5]:  # warm-up
        pipeline.search_texts(index, [(text, lang, 20)], clc=clc)
    for text, lang in queries:
        start = time.perf_counter()
        pipeline.search_texts(index, [(text, lang, 20)], clc=clc)
        per_lang.setdefault(lang, []).append((time.perf_counter() - start) * 1000)
    every = [ms for values in per_lang.values() for ms in values]

    def stats(values: list[float]) -> dict[str, float]:
        values = sorted(values)
        return {
            "p50": round(statistics.median(values), 2),
            "p95": round(values[int(0.95 * (len(values) - 1))], 2),
            "mean": round(statistics.fmean(values), 2),
        }

    return {"all": stats(every), **{lang: stats(values) for lang, values in per_lang.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-lang", type=int, default=40)
    parser.add_argument("--lexicons", type=Path, required=True)
    parser.add_argument("--translation-corpus", type=Path, required=True)
    parser.add_argument("--classifier", action="append", default=[], help="TRANSLATOR=FOLDER (repeatable)")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    settings = Settings()
    models = load_models(settings, threads=1, clc=False)
    index = ImageIndex.open(settings, image_space=models.image_space, encoder=models.image_encoder)
    pipeline = QueryPipeline(models, settings, QueryCache(0))
    translators = {
        "gloss": settings.model_copy(update={"clc_translator": "gloss", "clc_lexicons_dir": args.lexicons}),
        "retrieval": settings.model_copy(update={"clc_translator": "retrieval", "clc_corpus": args.translation_corpus}),
    }
    classifiers = dict(item.split("=", 1) for item in args.classifier)
    queries = dev_queries(args.per_lang)
    results: dict[str, Any] = {"load_average_before": os.getloadavg(), "queries": len(queries), "photos": len(index)}
    results["off"] = timings(pipeline, index, queries, "off")
    print("off", results["off"]["all"], flush=True)
    for name, translator_settings in translators.items():
        models.translator = load_translator(translator_settings, [models.text.encoder])
        models.clc_classifier = None
        results[f"average/{name}"] = timings(pipeline, index, queries, "average")
        print(f"average/{name}", results[f"average/{name}"]["all"], flush=True)
        if name in classifiers:
            models.clc_classifier = ClcClassifier.load(Path(classifiers[name]))
            results[f"classifier/{name}"] = timings(pipeline, index, queries, "classifier")
            print(f"classifier/{name}", results[f"classifier/{name}"]["all"], flush=True)
    results["load_average_after"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
