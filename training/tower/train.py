"""Train the text tower on frozen features: Adam, in-batch hard negatives, early stopping on the dev recalls.

Recipe (M3L paper §3.2 unless noted): Adam lr 1e-3, β1 0.99; batch 128 of distinct images (see
:mod:`training.data.sampler`); after every epoch the dev sum of recalls (t→i + i→t, R@1/5/10, one caption per image
and training language) decides early stopping; the best epoch's weights are kept. Seeds are fixed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.image_space import ImageSpace
from indexer.settings import Settings
from indexer.tower import TextTower
from training.bridge import LanguageBridge, remove_bridge
from training.data.prepared import PreparedSplit, prepare_split
from training.data.sampler import DistinctImageBatches
from training.evaluation.evaluate import Evaluation, evaluate_tower, evaluate_vectors, first_caption_rows
from training.losses import create_loss
from training.losses.c2c import CaptionCaptionLoss
from training.schedule import Schedule
from training.tower.concept_set import ConceptOptions, ConceptSet
from training.tower.distill import DistillOptions, DistillSet
from training.tower.early_stop import BestEpoch
from training.tower.model_card import write_model_card
from training.tower.space import fit_image_space, image_targets, tower_outputs

log = logging.getLogger(__name__)


@dataclass
class TrainConfig(Schedule):  # the M3L paper's schedule: the defaults of Schedule
    unused = ("steps", "warmup")

    data: Path
    out: Path
    cache_dir: Path
    settings: Settings  # encoders are built from it (models folder, device, backend, e5 precision)
    langs: list[str]
    split: str = "train"
    dev_split: str | None = "dev"
    captions_per_lang: int | None = None  # first N captions per image and language; None = all
    max_images: int | None = None  # a fixed random subset of N training images; None = all
    extra_captions: list[Path] = field(default_factory=list)  # more caption files of the data set's photos
    loss: str = "m3l"
    loss_options: dict[str, Any] = field(default_factory=dict)
    text_encoder: str = "muse"
    image_encoder: str = "efficientnet-lite2"
    space: str = "center-l2"
    image_space_from: Path | None = None
    hidden_dims: list[int] = field(default_factory=lambda: [1024, 2048])
    dropouts: list[float] = field(default_factory=lambda: [0.2, 0.1, 0.0])
    final_relu: bool | None = None  # None: ReLU on raw (non-negative) CNN targets only
    c2c_weight: float = 0.0  # weight of the caption–caption loss between two languages of an image; 0 = off
    c2c_temperature: float = 0.05
    bridge_from: Path | None = None  # a folder with a language bridge: applied to its languages, shipped alongside
    distill: DistillOptions | None = None  # text-only corpora + teacher (training/tower/distill.py); None = off
    concepts: ConceptOptions | None = None  # class names → class prototypes (training/tower/concept_set.py)
    command: str = ""


@dataclass
class TrainResult:
    tower: TextTower
    best_epoch: int
    history: list[dict[str, float]]
    seconds: float
    dev: Evaluation | None
    unsupported_langs: list[str]


def _quick_dev_score(
    tower: TextTower, space_kind: str, dev: PreparedSplit, rows: np.ndarray, images: np.ndarray
) -> float:
    texts = tower.embed(dev.text_embeddings[rows])  # unit vectors, as at search time
    full = np.zeros((len(dev.text_embeddings), texts.shape[1]), dtype=np.float32)
    full[rows] = texts
    return evaluate_vectors(images, full, dev, rows=rows, with_c2c=False).rsum


def train(config: TrainConfig) -> TrainResult:
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    image_encoder = build_image_encoder(config.settings, config.image_encoder)
    text_encoder = build_text_encoder(config.settings, config.text_encoder)
    unsupported = [lang for lang in config.langs if not text_encoder.supports(lang)]
    if unsupported:
        log.warning("text encoder %s does not declare %s; training on them anyway", text_encoder.name, unsupported)
    train_split = prepare_split(
        config.data,
        config.split,
        config.langs,
        image_encoder,
        text_encoder,
        config.cache_dir,
        captions_per_lang=config.captions_per_lang,
        max_images=config.max_images,
        extra_captions=config.extra_captions,
    )
    dev = (
        prepare_split(
            config.data,
            config.dev_split,
            None,
            image_encoder,
            text_encoder,
            config.cache_dir,
            extra_captions=config.extra_captions,
        )
        if config.dev_split
        else None
    )
    bridge = LanguageBridge.from_pretrained(Path(config.bridge_from)) if config.bridge_from else None
    if config.bridge_from and bridge is None:
        raise FileNotFoundError(f"no language bridge (bridge.json) in {config.bridge_from}")
    if bridge is not None:
        # Train on what the tower will see at search time: the bridged embedding for the bridge's languages.
        for prepared in (train_split, dev):
            if prepared is not None:
                prepared.text_embeddings = bridge.apply(prepared.text_embeddings, prepared.caption_lang.tolist())
    space = fit_image_space(config.space, train_split.image_features, config.image_space_from)
    targets = torch.from_numpy(image_targets(config.space, space, train_split.image_features))
    sentences = torch.from_numpy(train_split.text_embeddings)
    final_relu = config.final_relu if config.final_relu is not None else config.space == "raw"
    tower = TextTower(
        input_dim=train_split.text_embeddings.shape[1],
        output_dim=train_split.image_features.shape[1],
        hidden_dims=config.hidden_dims,
        dropouts=config.dropouts,
        final_relu=final_relu,
        text_encoder=text_encoder.name,
        image_encoder=image_encoder.name,
        image_space=space.to_config(),
        languages=config.langs,
    )
    loss_fn = create_loss(config.loss, **config.loss_options)
    distill = (
        DistillSet(config.distill, text_encoder, config.cache_dir, config.space, space, bridge, config.seed)
        if config.distill is not None and config.distill.corpus
        else None
    )
    concepts = (
        ConceptSet(config.concepts, text_encoder, image_encoder, config.cache_dir, config.space, config.seed)
        if config.concepts is not None and config.concepts.weight > 0
        else None
    )
    c2c_fn = CaptionCaptionLoss(config.c2c_temperature) if config.c2c_weight > 0 else None
    optimizer = torch.optim.Adam(tower.parameters(), lr=config.lr, betas=(config.beta1, 0.999))
    batches = DistinctImageBatches(
        train_split.caption_image, train_split.caption_lang, config.batch_size, config.seed, partners=c2c_fn is not None
    )
    dev_langs = [lang for lang in config.langs if dev is not None and lang in dev.languages]
    dev_rows = first_caption_rows(dev, dev_langs) if dev is not None else np.zeros(0, dtype=np.int64)
    dev_images = space.apply(dev.image_features) if dev is not None else np.zeros((0, 1), dtype=np.float32)

    history: list[dict[str, float]] = []
    best = BestEpoch(tower, config.patience)
    for epoch in range(1, config.epochs + 1):
        tower.train()
        losses = []
        for rows, image_index, partners in tqdm(
            batches, desc=f"epoch {epoch}/{config.epochs}", unit="batch", leave=False
        ):
            loss = _batch_loss(config, tower, loss_fn, c2c_fn, sentences, targets, rows, image_index, partners)
            if distill is not None:
                loss = loss + distill.batch_loss(tower)
            if concepts is not None:
                loss = loss + concepts.batch_loss(tower)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        score = (
            _quick_dev_score(tower, config.space, dev, dev_rows, dev_images)
            if dev is not None
            else -float(np.mean(losses))
        )
        history.append({"epoch": epoch, "loss": float(np.mean(losses)), "dev_rsum": score})
        tqdm.write(
            f"epoch {epoch}: loss {np.mean(losses):.4f}  dev rsum {score:.3f} ({', '.join(dev_langs) or 'no dev'})"
        )
        if best.update(tower, epoch, score):
            break
    best.restore(tower)
    seconds = time.perf_counter() - started
    evaluation = evaluate_tower(tower, dev) if dev is not None else None  # dev captions are already bridged
    result = TrainResult(tower, best.epoch, history, seconds, evaluation, unsupported)
    save(
        result,
        config,
        space,
        bridge,
        distill.summary() if distill is not None else None,
        concepts=concepts.summary() if concepts is not None else None,
    )
    return result


def _batch_loss(
    config: TrainConfig,
    tower: TextTower,
    loss_fn: torch.nn.Module,
    c2c_fn: CaptionCaptionLoss | None,
    sentences: torch.Tensor,
    targets: torch.Tensor,
    rows: np.ndarray,
    image_index: np.ndarray,
    partners: np.ndarray | None,
) -> torch.Tensor:
    """The text–image loss of a batch; with partners, their captions join it and the c2c term ties each pair."""
    if c2c_fn is None or partners is None or not (partners >= 0).any():
        text = tower_outputs(config.space, tower(sentences[rows]))
        return loss_fn(text, targets[image_index], torch.from_numpy(image_index))
    paired = np.flatnonzero(partners >= 0)
    all_rows = np.concatenate([rows, partners[paired]])
    all_images = np.concatenate([image_index, image_index[paired]])
    text = tower_outputs(config.space, tower(sentences[all_rows]))
    loss = loss_fn(text, targets[all_images], torch.from_numpy(all_images))
    return loss + config.c2c_weight * c2c_fn(text[paired], text[len(rows) :])


def save(
    result: TrainResult,
    config: TrainConfig,
    space: ImageSpace,
    bridge: LanguageBridge | None = None,
    distilled: dict[str, Any] | None = None,
    disjoint: dict[str, Any] | None = None,
    concepts: dict[str, Any] | None = None,
) -> None:
    recipe = json.loads(json.dumps(config.recipe(), default=str))  # paths (also inside the distill options) as text
    for private in ("cache_dir", "settings", "out", "command"):
        recipe.pop(private, None)
    training: dict[str, Any] = {
        "recipe": recipe,
        "best_epoch": result.best_epoch,
        "history": result.history,
        "seconds": round(result.seconds, 1),
        "image_space_fingerprint": space.fingerprint,
        "command": config.command,
    }
    if distilled is not None:
        training["distilled"] = distilled
    if concepts is not None:  # the class-name term (training/tower/concept_set.py)
        training["concepts"] = concepts
    if disjoint is not None:  # the collections and options of `polyglot train tower --disjoint`
        training["disjoint"] = disjoint
    if result.dev is not None:
        training["dev"] = result.dev.report
        training["dev_c2c"] = result.dev.c2c
    result.tower.save_pretrained(config.out, extra={"training": training})
    if bridge is not None:  # the tower learnt on bridged captions: it ships with its bridge
        bridge.save_pretrained(Path(config.out))
    else:  # a bridge left from an earlier tower in this folder does not belong to this one
        remove_bridge(Path(config.out))
    write_model_card(config.out, result.tower, training, result.unsupported_langs)


def parse_langs(value: str) -> list[str]:
    langs = [part.strip().lower() for part in value.split(",") if part.strip()]
    if not langs:
        raise ValueError("--langs needs at least one language code, e.g. en or en,de,fr,cs,pt")
    return list(dict.fromkeys(langs))


def parse_ints(value: Sequence[int] | str) -> list[int]:
    return [int(v) for v in (value.split(",") if isinstance(value, str) else value) if str(v).strip()]
