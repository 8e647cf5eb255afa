"""The adaptive relevance cut-off on the dev split (issue 27): results removed against relevant ones lost.

Every dev caption (en, de, fr, cs: one caption per photo and language) is a query through the served pipeline
(the route its language takes in ``/search``); its one known relevant photo is the photo it describes. A page of
``k`` = 20 results is cut by each rule; per rule and language we report:

* kept: results left on the page (mean);
* removed: share of the page's other (presumed irrelevant) results removed — an underestimate of precision gained,
  since other dev photos often show the same kind of scene;
* lost: share of queries whose relevant photo was on the page and is cut away.

Rules: ``z ≥ t`` over the best ``POOL`` (100) scores (the implemented one, ``indexer/relevance.py``), and for
comparison a fixed ``min_score`` and ``score ≥ best − Δ``. Run from the repository root::

    .venv/bin/python benchmarks/relevance_cutoff.py --out benchmarks/relevance_cutoff.md
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from indexer.query import QueryCache, QueryPipeline, load_models
from indexer.relevance import POOL, cutoff_count
from indexer.settings import Settings
from training.data.prepared import prepare_split

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "m30k-f8k"
K = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--langs", default="en,de,fr,cs")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("relevance_cutoff.md"))
    args = parser.parse_args()
    began = time.perf_counter()
    settings = Settings()
    models = load_models(settings, sentence_cache=settings.resolved_cache_dir)
    langs = args.langs.split(",")
    split = prepare_split(args.data, "dev", langs, models.image_encoder, None, settings.resolved_cache_dir)
    pipeline = QueryPipeline(models, settings, QueryCache(0))
    images = models.image_space.apply(split.image_features)
    texts = pipeline.embed_queries(split.caption_text, split.caption_lang.tolist())
    scores = texts @ images.T  # exact, as the index's re-ranked scores are
    order = np.argsort(-scores, axis=1)[:, :POOL]
    top = np.take_along_axis(scores, order, axis=1)
    truth = split.caption_image
    rules: dict[str, Callable[[np.ndarray], int]] = {"none (k = 20)": lambda s: K}
    for z in (1.5, 2.0, 2.5, 3.0, 3.5):
        rules[f"z ≥ {z}"] = lambda s, z=z: min(K, cutoff_count(s, z))
    for fixed in (0.20, 0.25, 0.30):
        rules[f"min_score {fixed}"] = lambda s, fixed=fixed: int((s[:K] >= fixed).sum())
    for delta in (0.05, 0.10):
        rules[f"best − {delta}"] = lambda s, delta=delta: int((s[:K] >= s[0] - delta).sum())
    lines = [
        "# Adaptive relevance cut-off on dev",
        "",
        f"Command: `.venv/bin/python benchmarks/relevance_cutoff.py {' '.join(sys.argv[1:])}` "
        f"({time.perf_counter() - began:.0f} s to set up, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
        "",
        f"{len(split.images)} dev photos; queries: {', '.join(f'{lang} {int((split.caption_lang == lang).sum())}' for lang in langs)} "
        "captions through the served pipeline (default settings). Page k = 20. **kept**: results left (mean); "
        "**removed**: share of the page's other results removed; **lost**: share of queries whose relevant photo "
        "was on the page and is cut away.",
        "",
        "| rule | " + " | ".join(f"{lang} kept / removed / lost" for lang in langs) + " |",
        "| --- | " + " | ".join("---" for _ in langs) + " |",
    ]
    for name, rule in rules.items():
        cells = []
        for lang in langs:
            rows = np.flatnonzero(split.caption_lang == lang)
            kept, removed, lost, on_page = [], [], 0, 0
            for row in rows:
                count = rule(top[row])
                page = order[row, :K]
                relevant_at = np.flatnonzero(page == truth[row])
                others = K - len(relevant_at)
                kept.append(count)
                removed.append((others - (count - int(len(relevant_at) and relevant_at[0] < count))) / others)
                if len(relevant_at):
                    on_page += 1
                    lost += int(relevant_at[0] >= count)
            cells.append(f"{np.mean(kept):.1f} / {np.mean(removed):.2f} / {lost / max(1, on_page):.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("")
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
