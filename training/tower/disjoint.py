"""Train the text tower on several collections that need not share photos (Kádár et al., "Bootstrapping Disjoint
Datasets for Multilingual Multimodal Representation Learning", §2–3).

Every step samples a collection uniformly, then an objective: with probability ``c2c_prob`` the caption–caption
ranking task (two captions of the same photo in different languages: ``<c_a, c_b>`` pairs) when the collection has
photos with captions in two languages, otherwise the image–caption task ``<i, c>``. Both use the same loss (the
paper's max-violation hinge, :mod:`training.losses.vse`, α = 0.2, by default). An epoch is as many steps as the
collections have batches together. Gradient norms are clipped (the paper's 2.0). Early stopping reads the sum of
recalls on each collection's held-out photos (``splits/<dev_split>.txt``, from ``polyglot collections split``);
collections without that split (e.g. pseudo-pairs) do not vote. ``init_from`` fine-tunes an existing tower (same
encoders and image space) instead of starting from scratch.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.tower import TextTower
from training.data.prepared import PreparedSplit, prepare_split
from training.data.sampler import DistinctImageBatches
from training.evaluation.evaluate import first_caption_rows
from training.losses import create_loss
from training.tower.early_stop import BestEpoch
from training.tower.space import fit_image_space, image_targets, tower_outputs
from training.tower.train import TrainConfig, TrainResult, _quick_dev_score, save


@dataclass
class DisjointOptions:
    collections: list[Path] = field(default_factory=list)
    c2c_prob: float = 0.5  # the paper's p: caption–caption task instead of image–caption, where pairs exist
    init_from: Path | None = None  # fine-tune this tower instead of a fresh one
    grad_clip: float | None = 2.0


@dataclass
class Collection:
    name: str
    train: PreparedSplit
    stop: PreparedSplit | None
    sentences: torch.Tensor
    targets: torch.Tensor
    batches: DistinctImageBatches
    has_pairs: bool


def _has_split(root: Path, split: str) -> bool:
    path = Path(root) / "splits" / f"{split}.txt"
    return path.exists() and any(line.strip() for line in path.read_text(encoding="utf-8").splitlines())


def _load(config: TrainConfig, options: DisjointOptions, image_encoder: Any, text_encoder: Any) -> list[PreparedSplit]:
    splits = []
    for root in options.collections:
        langs = [lang for lang in config.langs if lang in _languages_of(root, config.split)] if config.langs else None
        if langs == []:
            raise ValueError(f"collection {root} has none of the languages {config.langs}")
        splits.append(prepare_split(root, config.split, langs, image_encoder, text_encoder, config.cache_dir))
    return splits


def _languages_of(root: Path, split: str) -> set[str]:
    from training.data.dataset import load_dataset

    return set(load_dataset(root, split).languages())


def train_disjoint(config: TrainConfig, options: DisjointOptions) -> TrainResult:
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    if len(options.collections) < 1:
        raise ValueError("--disjoint needs at least one --data collection")
    if not 0 <= options.c2c_prob <= 1:
        raise ValueError("the c2c probability must be in [0, 1]")
    if config.bridge_from or config.distill or config.c2c_weight:
        raise ValueError("--disjoint does not combine with --bridge-from, --text-corpus or --c2c-weight")
    init = TextTower.from_pretrained(options.init_from) if options.init_from else None
    text_name = init.text_encoder if init is not None else config.text_encoder
    image_name = init.image_encoder if init is not None else config.image_encoder
    image_encoder = build_image_encoder(config.settings, image_name)
    text_encoder = build_text_encoder(config.settings, text_name)
    trains = _load(config, options, image_encoder, text_encoder)
    space_from = config.image_space_from or options.init_from
    space = fit_image_space(config.space, np.concatenate([t.image_features for t in trains]), space_from)
    collections = []
    for k, (root, prepared) in enumerate(zip(options.collections, trains, strict=True)):
        stop = None
        if config.dev_split and _has_split(root, config.dev_split):  # held-out photos vote in their languages
            held = [lang for lang in prepared.languages if lang in _languages_of(root, config.dev_split)]
            stop = prepare_split(root, config.dev_split, held, image_encoder, text_encoder, config.cache_dir)
        batches = DistinctImageBatches(
            prepared.caption_image, prepared.caption_lang, config.batch_size, config.seed + k, partners=True
        )
        collections.append(
            Collection(
                name=Path(root).name,
                train=prepared,
                stop=stop,
                sentences=torch.from_numpy(prepared.text_embeddings),
                targets=torch.from_numpy(image_targets(config.space, space, prepared.image_features)),
                batches=batches,
                has_pairs=any(len(group) > 1 for group in batches.groups),
            )
        )
    langs = sorted({lang for c in collections for lang in c.train.languages})
    if init is not None:
        tower = init.train()
        if tower.config["input_dim"] != trains[0].text_embeddings.shape[1]:
            raise ValueError(f"{options.init_from} takes {tower.config['input_dim']}-d sentence embeddings")
        tower.config["languages"] = sorted(set(tower.config.get("languages") or []) | set(langs))
        tower.config["image_space"] = space.to_config()
    else:
        tower = TextTower(
            input_dim=trains[0].text_embeddings.shape[1],
            output_dim=trains[0].image_features.shape[1],
            hidden_dims=config.hidden_dims,
            dropouts=config.dropouts,
            final_relu=config.final_relu if config.final_relu is not None else config.space == "raw",
            text_encoder=text_encoder.name,
            image_encoder=image_encoder.name,
            image_space=space.to_config(),
            languages=langs,
        )
    loss_fn = create_loss(config.loss, **config.loss_options)
    optimizer = torch.optim.Adam(tower.parameters(), lr=config.lr, betas=(config.beta1, 0.999))
    steps = sum(len(c.batches) for c in collections)
    streams = [_endless(c.batches) for c in collections]
    stops = [(c, first_caption_rows(c.stop), space.apply(c.stop.image_features)) for c in collections if c.stop]

    def score() -> float:
        if not stops:
            return -float(np.mean(losses))
        return float(sum(_quick_dev_score(tower, config.space, c.stop, rows, im) for c, rows, im in stops if c.stop))

    history: list[dict[str, float]] = []
    best = BestEpoch(tower, config.patience, "held-out")
    for epoch in range(1, config.epochs + 1):
        tower.train()
        losses: list[float] = []
        tasks = {"i2c": 0, "c2c": 0}
        for _ in tqdm(range(steps), desc=f"epoch {epoch}/{config.epochs}", unit="batch", leave=False):
            k = int(rng.integers(len(collections)))
            rows, images, partners = next(streams[k])
            loss, task = _step_loss(config, collections[k], tower, loss_fn, rows, images, partners, rng, options)
            tasks[task] += 1
            optimizer.zero_grad()
            loss.backward()
            if options.grad_clip:
                torch.nn.utils.clip_grad_norm_(tower.parameters(), options.grad_clip)
            optimizer.step()
            losses.append(float(loss.detach()))
        tower.eval()
        value = score()
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "heldout_rsum": value, **tasks})
        tqdm.write(f"epoch {epoch}: loss {np.mean(losses):.4f}  held-out rsum {value:.3f}  tasks {tasks}")
        if best.update(tower, epoch, value):
            break
    best.restore(tower)
    result = TrainResult(tower, best.epoch, history, time.perf_counter() - started, None, [])
    save(result, config, space, disjoint=json.loads(json.dumps(asdict(options), default=str)))
    return result


def _endless(batches: DistinctImageBatches) -> Any:
    while True:
        yield from batches


def _step_loss(
    config: TrainConfig,
    collection: Collection,
    tower: TextTower,
    loss_fn: torch.nn.Module,
    rows: np.ndarray,
    images: np.ndarray,
    partners: np.ndarray | None,
    rng: np.random.Generator,
    options: DisjointOptions,
) -> tuple[torch.Tensor, str]:
    """One batch's loss: caption–caption ranking (``c2c``) or image–caption ranking (``i2c``)."""
    paired = np.flatnonzero(partners >= 0) if partners is not None else np.zeros(0, dtype=np.int64)
    if collection.has_pairs and len(paired) >= 2 and rng.random() < options.c2c_prob:
        first = tower_outputs(config.space, tower(collection.sentences[rows[paired]]))
        second = tower_outputs(config.space, tower(collection.sentences[partners[paired]]))  # type: ignore[index]
        return loss_fn(first, second, torch.from_numpy(images[paired])), "c2c"
    text = tower_outputs(config.space, tower(collection.sentences[rows]))
    return loss_fn(text, collection.targets[images], torch.from_numpy(images)), "i2c"
