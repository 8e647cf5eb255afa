"""Quick M3L ablation: a small tower, a fixed number of steps, the dev text→image R@10 curve per variant.

Cheap enough for the shared 2-core machine (≈ 1 min per variant): one hidden block of 512, 200 steps of 128
distinct images, English only; every 50 steps, t→i R@10 of the first English caption of each dev image over
the 1,000-image dev pool. Used for the "what each change bought" table::

    python -m training.tower.ablation --data ../shared/data/m30k-f8k
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.settings import Settings
from indexer.tower import TextTower
from training.data.prepared import PreparedSplit, prepare_split
from training.data.sampler import DistinctImageBatches
from training.evaluation.evaluate import evaluate_vectors, first_caption_rows
from training.losses import create_loss
from training.tower.space import fit_image_space, image_targets, tower_outputs

# (name, training space, loss, loss options, Adam β1)
VARIANTS: list[tuple[str, str, str, dict[str, Any], float]] = [
    ("paper: raw features, ρ=4, ratio", "raw", "m3l", {}, 0.99),
    ("raw features, ρ=1, bounded", "raw", "m3l", {"rho": 1.0, "bounded": True}, 0.99),
    ("centre+l2, ρ=4, ratio", "center-l2", "m3l", {}, 0.99),
    ("centre+l2, ρ=1, ratio", "center-l2", "m3l", {"rho": 1.0}, 0.99),
    ("centre+l2, ρ=4, bounded", "center-l2", "m3l", {"bounded": True}, 0.99),
    ("centre+l2, ρ=2, bounded", "center-l2", "m3l", {"rho": 2.0, "bounded": True}, 0.99),
    ("centre+l2, ρ=1, bounded", "center-l2", "m3l", {"rho": 1.0, "bounded": True}, 0.99),
    ("centre+l2, ρ=0.5, bounded", "center-l2", "m3l", {"rho": 0.5, "bounded": True}, 0.99),
    ("l2 only, ρ=1, bounded", "l2", "m3l", {"rho": 1.0, "bounded": True}, 0.99),
    ("centre+l2, ρ=4, bounded, no negative text (α2=0)", "center-l2", "m3l", {"bounded": True, "alpha2": 0.0}, 0.99),
    ("centre+l2, ρ=1, bounded, Adam β1=0.9", "center-l2", "m3l", {"rho": 1.0, "bounded": True}, 0.9),
    ("VSE hinge (reference)", "center-l2", "vse", {}, 0.99),
    ("VSE hinge, Adam β1=0.9", "center-l2", "vse", {}, 0.9),
    ("PATR η=2 (reference)", "center-l2", "patr", {}, 0.99),
]


def run_variant(
    train: PreparedSplit,
    dev: PreparedSplit,
    space_kind: str,
    loss: str,
    options: dict[str, Any],
    beta1: float,
    steps: int,
) -> list[float]:
    torch.manual_seed(0)
    space = fit_image_space(space_kind, train.image_features)
    targets = torch.from_numpy(image_targets(space_kind, space, train.image_features))
    sentences = torch.from_numpy(train.text_embeddings)
    tower = TextTower(
        train.text_embeddings.shape[1],
        train.image_features.shape[1],
        hidden_dims=[512],
        dropouts=[0.1, 0.0],
        final_relu=space_kind == "raw",
        image_space=space.to_config(),
    )
    loss_fn = create_loss(loss, **options)
    optimizer = torch.optim.Adam(tower.parameters(), lr=1e-3, betas=(beta1, 0.999))
    rows = first_caption_rows(dev, ["en"])
    dev_images = space.apply(dev.image_features)
    curve: list[float] = []
    step = 0
    batches = DistinctImageBatches(train.caption_image, train.caption_lang, 128, seed=0)
    while step < steps:
        for caption_rows, image_index, _ in batches:
            tower.train()
            output = tower_outputs(space_kind, tower(sentences[caption_rows]))
            value = loss_fn(output, targets[image_index], torch.from_numpy(image_index))
            optimizer.zero_grad()
            value.backward()
            optimizer.step()
            step += 1
            if step % 50 == 0:
                texts = np.zeros((len(dev.text_embeddings), dev_images.shape[1]), dtype=np.float32)
                texts[rows] = tower.embed(dev.text_embeddings[rows])
                report = evaluate_vectors(dev_images, texts, dev, rows=rows, with_c2c=False).report
                curve.append(round(report["languages"]["en"]["t2i"]["r10"], 3))
            if step >= steps:
                break
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--text-encoder", default="muse")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = Settings()
    image_encoder = build_image_encoder(settings, "efficientnet-lite2")
    text_encoder = build_text_encoder(settings, args.text_encoder)
    cache = settings.resolved_cache_dir
    train = prepare_split(args.data, "train", ["en"], image_encoder, text_encoder, cache)
    dev = prepare_split(args.data, "dev", ["en"], image_encoder, text_encoder, cache)
    results = []
    for name, space, loss, options, beta1 in VARIANTS:
        started = time.perf_counter()
        curve = run_variant(train, dev, space, loss, options, beta1, args.steps)
        results.append(
            {
                "variant": name,
                "space": space,
                "loss": loss,
                "options": options,
                "beta1": beta1,
                "r10_every_50_steps": curve,
            }
        )
        print(f"{name}: t2i R@10 every 50 steps {curve} ({time.perf_counter() - started:.0f} s)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
