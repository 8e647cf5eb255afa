"""Hyper-parameter sweep of the DPCCA family on a held-out part of the train split (features loaded once).

The same functions as ``polyglot train --method …`` (``training/align/alignment.py``): train-split task-1 triplets
(en caption, de translation, image), 10 % of the train images held out for selection; caption→caption R@1 and
BLEU+1 both ways on the held-out triplets and on the dev split (reported, never used to choose)::

    .venv/bin/python benchmarks/dpcca_sweep.py --text-encoder muse --json docs/results/align/dpcca-sweep-muse.json

Grid: closed-form CCA/PCCA with ε ∈ {1e-3, 1e-2, 0.1, 1} and L ∈ {128, 256}; DCCA_NOI and DPCCA A/B with
2 tanh hidden layers of the input width, L = 128, ρ = 0.9, batch 128, lr ∈ {1e-3, 1e-4}, ≤ 60 epochs with
early stopping (patience 8) on the held-out mean R@1.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.settings import Settings
from training.align.alignment import AlignConfig, ImageView, Triplets, fit, split_holdout, triplets
from training.align.c2c_eval import c2c_table
from training.align.dcca import NoiConfig
from training.data.prepared import prepare_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/m30k-f8k"))
    parser.add_argument("--text-encoder", default="muse")
    parser.add_argument("--langs", default="en,de")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = Settings()
    x_lang, y_lang = args.langs.split(",")
    image = build_image_encoder(settings, "efficientnet-lite2")
    text = build_text_encoder(settings, args.text_encoder)

    def load(split: str) -> Triplets:
        prepared = prepare_split(args.data, split, [x_lang, y_lang], image, text, settings.resolved_cache_dir)
        return triplets(prepared, x_lang, y_lang)

    everything = load("train")
    view = ImageView(everything.z, everything.x.shape[1])
    everything.z = view(everything.z)
    train, check = split_holdout(everything, 0.1)
    assert check is not None
    dev = load("dev")
    base = AlignConfig(
        data=args.data,
        out=Path("unused"),
        cache_dir=settings.resolved_cache_dir,
        settings=settings,
        langs=(x_lang, y_lang),
        text_encoder=args.text_encoder,
        noi=NoiConfig(patience=8),
    )
    grid: list[tuple[str, dict[str, Any]]] = [("raw", {})]
    grid += [(m, {"eps": e, "dim": d}) for m in ("cca", "pcca") for e in (1e-3, 1e-2, 1e-1, 1.0) for d in (128, 256)]
    grid += [
        (m, {"noi": NoiConfig(epochs=60, lr=lr, rho=0.9, patience=8)})
        for m in ("dcca-noi", "dpcca-a", "dpcca-b")
        for lr in (1e-3, 1e-4)
    ]
    results: dict[str, Any] = {}
    for method, options in grid:
        started = time.perf_counter()
        alignment = fit(replace(base, method=method, **options), train, check)
        key = method + "".join(f" {k}={v.lr if k == 'noi' else v}" for k, v in options.items())
        tables = {}
        for name, part in (("holdout", check), ("dev", dev)):
            x, y = alignment.project("x", part.x), alignment.project("y", part.y)
            tables[name] = c2c_table(x, y, part.x_texts, part.y_texts, x_lang, y_lang)
        results[key] = {**tables, "epochs": len(alignment.history), "seconds": round(time.perf_counter() - started)}
        print(key, json.dumps({k: {d: round(r["r1"], 3) for d, r in t.items()} for k, t in tables.items()}), flush=True)
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
