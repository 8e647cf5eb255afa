"""Caption → caption search on the dev task-1 translations, through the code ``GET /captions/search`` runs.

The dev task-1 captions of the chosen languages (one caption per photo and language, translations of the English
one) are indexed in a fresh caption index with the served text side; every caption of language a then queries
the captions of language b through :class:`indexer.captions.cross_lingual.CrossLingualCaptions` — with the
configured alignments, and with each fallback alone — and R@1 counts the top caption being its own translation.
Latency: single queries through the same call with no query cache (what a request costs beyond HTTP), median
and p90, with the load average at the time (the machine is shared).

    POLYGLOT_MODELS_DIR=… POLYGLOT_CACHE_DIR=… python benchmarks/caption_search_eval.py \\
        --data ../shared/data/m30k-f8k --align training/assets/align/en-de --align training/assets/align/en-fr \\
        --pairs en-de,en-fr,en-cs,de-fr --json docs/results/r6b/caption-search.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from tqdm.auto import tqdm

from indexer.captions import Caption, CaptionIndex, read_captions
from indexer.captions.cross_lingual import CrossLingualCaptions
from indexer.query import load_alignments, load_text_tower
from indexer.settings import Settings
from indexer.tower import TextEmbedder


def dev_pairs(data: Path, split: str, langs: set[str]) -> dict[str, dict[str, str]]:
    """``{image: {lang: task-1 caption}}`` of the split's photos."""
    images = set((data / "splits" / f"{split}.txt").read_text(encoding="utf-8").split())
    found: dict[str, dict[str, str]] = {}
    for caption in read_captions(data / "captions.jsonl", langs):
        if caption.image in images and caption.source == "multi30k-task1":
            found.setdefault(caption.image, {}).setdefault(caption.lang, caption.text)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--align", type=Path, action="append", default=[], help="An alignment folder (repeatable).")
    parser.add_argument("--pairs", default="en-de,en-fr,en-cs,de-fr")
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()

    pairs = [tuple(p.split("-")) for p in args.pairs.split(",")]
    langs = {code for pair in pairs for code in pair}
    settings = Settings().model_copy(update={"caption_alignments": args.align})
    cache = settings.resolved_cache_dir
    tower = load_text_tower(settings, sentence_cache=cache, alignments=False)
    alignments, encoders = load_alignments(settings, tower)
    by_image = dev_pairs(args.data, args.split, langs)
    report: dict[str, object] = {
        "data": str(args.data),
        "split": args.split,
        "alignments": [str(a.folder) for a in alignments],
        "tower": str(settings.models.tower_path or "shipped"),
        "recall": {},
    }
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as folder:
        index = CaptionIndex.open(Path(folder), tower, cache)
        rows = [(image, lang, text) for image, texts in by_image.items() for lang, text in texts.items()]
        with tqdm(total=len(rows), desc="index captions") as bar:
            index.add([Caption(lang, text, image, "multi30k-task1") for image, lang, text in rows], bar.update)
        setups = {
            "configured": CrossLingualCaptions(index, tower, alignments, encoders, "sentence", query_cache=cache),
            "sentence": CrossLingualCaptions(index, tower, [], {}, "sentence", query_cache=cache),
            "tower": CrossLingualCaptions(index, tower, [], {}, "tower", query_cache=cache),
        }
        recall: dict[str, dict[str, dict[str, float | int | str]]] = {}
        for a, b in pairs:
            for src, tgt in ((a, b), (b, a)):
                both = [(t[src], t[tgt]) for t in by_image.values() if src in t and tgt in t]
                for name, search in setups.items():
                    found, space = search.search([q for q, _ in both], src, tgt, 1)
                    hits = sum(bool(f) and f[0].text == want for f, (_, want) in zip(found, both, strict=True))
                    recall.setdefault(f"{src}→{tgt}", {})[name] = {
                        "r1": round(hits / len(both), 4),
                        "queries": len(both),
                        "space": space,
                    }
                    print(f"{src}→{tgt} {name:10s} {space:24s} R@1 {hits / len(both):.3f} ({len(both)})", flush=True)
        report["recall"] = recall
        # As served: no features cache for the queries (the tower's embedder without it, no query cache).
        uncached = TextEmbedder(tower.tower, tower.encoder, tower.bridge)
        served = CrossLingualCaptions(index, uncached, alignments, encoders, settings.query.caption_search_fallback)
        latency: dict[str, dict[str, float | str]] = {}
        for a, b in pairs:
            queries = [t[a] for t in by_image.values() if a in t][: args.latency_queries]
            served.search(queries[:1], a, b, 5)  # kept vectors computed before timing
            times = []
            for query in queries:
                start = time.perf_counter()
                _, space = served.search([query], a, b, 5)
                times.append((time.perf_counter() - start) * 1000)
            times.sort()
            latency[f"{a}→{b}"] = {
                "space": space,
                "median_ms": round(statistics.median(times), 2),
                "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
                "queries": len(times),
            }
            print(f"latency {a}→{b} {space}: {latency[f'{a}→{b}']}", flush=True)
        report["latency"] = latency
        report["load_average"] = [round(x, 2) for x in os.getloadavg()]
        index.close()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
