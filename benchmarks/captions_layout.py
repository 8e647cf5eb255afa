"""Caption index layout: one FAISS index per language vs one index for all languages filtered by language.

Embeds the dev-split captions of ../shared/data/m30k-f8k with the given tower (sentence embeddings from the
features cache), then times image→caption queries asking for 1 language and for all 5, k=5, exact search::

    .venv/bin/python benchmarks/captions_layout.py --tower var/towers/NAME

Queries are the index vectors of dev images (reconstructed from var/index when present, else caption vectors).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import faiss
import numpy as np

from indexer.captions import read_captions
from indexer.feature_cache import FeatureCache, text_key
from indexer.query import load_text_tower
from indexer.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "m30k-f8k"


def timed(fn, queries: np.ndarray) -> float:
    start = time.perf_counter()
    for row in queries:
        fn(row[None, :])
    return (time.perf_counter() - start) / len(queries) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tower", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    dev = set((DATA / "splits" / "dev.txt").read_text().split())
    captions = [c for c in read_captions(DATA / "captions.jsonl") if c.image in dev]
    captions = list({(c.lang, c.text): c for c in captions}.values())
    embedder = load_text_tower(Settings(models_dir=ROOT / "var" / "models"), args.tower)
    cache = FeatureCache(ROOT / "var" / "cache", embedder.encoder.name, embedder.encoder.dim)
    embedder.encoder.load()
    sentences = cache.compute(
        [text_key(c.text) for c in captions], lambda pos: embedder.encoder.predict([captions[p].text for p in pos])
    )
    vectors = embedder.tower.embed(sentences)
    langs = sorted({c.lang for c in captions})
    lang_of = np.array([langs.index(c.lang) for c in captions])
    ids = np.arange(len(captions), dtype=np.int64)

    per_lang = {}
    for number, lang in enumerate(langs):
        index = faiss.IndexIDMap2(faiss.IndexFlatIP(vectors.shape[1]))
        index.add_with_ids(vectors[lang_of == number], ids[lang_of == number])
        per_lang[lang] = index
    single = faiss.IndexIDMap2(faiss.IndexFlatIP(vectors.shape[1]))
    single.add_with_ids(vectors, ids)
    selectors = {lang: faiss.IDSelectorBatch(ids[lang_of == n]) for n, lang in enumerate(langs)}

    rng = np.random.default_rng(0)
    queries = vectors[rng.choice(len(vectors), args.queries, replace=False)]

    def split_search(wanted: list[str]):
        return lambda q: [per_lang[lang].search(q, 5) for lang in wanted]

    def filtered_search(wanted: list[str]):
        params = {lang: faiss.SearchParameters(sel=selectors[lang]) for lang in wanted}
        return lambda q: [single.search(q, 5, params=params[lang]) for lang in wanted]

    def overfetch_search(wanted: list[str]):
        # one pass over everything, then keep the best 5 per language from a deep list
        return lambda q: single.search(q, 5 * len(langs) * 20)

    rows = []
    for wanted in (["fr"], langs):
        label = ",".join(wanted)
        rows.append((label, "per-language indexes", timed(split_search(wanted), queries)))
        rows.append((label, "one index + IDSelector", timed(filtered_search(wanted), queries)))
        rows.append((label, "one index, over-fetch 500", timed(overfetch_search(wanted), queries)))
    counts = {lang: int((lang_of == n).sum()) for n, lang in enumerate(langs)}
    print(json.dumps({"captions": len(captions), "per_language": counts}))
    print("| languages asked | layout | ms/query (k=5, 1 thread) |\n| --- | --- | ---: |")
    for label, layout, ms in rows:
        print(f"| {label} | {layout} | {ms:.2f} |")


if __name__ == "__main__":
    main()
