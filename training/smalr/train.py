"""``polyglot train smalr --method smalr|hem|la``: SMALR (Burns et al. 2020) and its baselines on frozen image features.

Recipe (§3, §4, Eq. (4)): L = L_mm + λ2·L_mask + λ3·L_adv + λ4·L_nc with λ1 = 1.5 inside L_mm, (λ2, λ3, λ4) =
(1e-4, 1e-6, 5e-2); every triplet loss cosine, m = 0.05, top-10 most violated; Adam, lr 1e-3 (the paper's for
HEM and LA). Methods: ``la`` (latent vocabulary only), ``hem`` (K language-specific words per language + latent
vocabulary), ``smalr`` (HEM + MCLM, with L_mm also on the masked sentences). L_nc and L_adv are MULE's alignment
constraints, used by all three (§3.3). Batches hold distinct images with two captions each, in two languages
(:class:`~training.data.sampler.DistinctImageBatches`). Early stopping on a held-out share of the TRAIN images.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

import indexer.encoders as encoders
from indexer.settings import Settings
from training.data.prepared import prepare_split
from training.data.sampler import DistinctImageBatches
from training.evaluation.retrieval_metrics import language_recalls, recall_sum
from training.losses.neighbourhood import neighbourhood_loss
from training.losses.triplet import bidirectional_triplet_loss
from training.schedule import Schedule
from training.smalr.batching import mask_words, padded
from training.smalr.network import SmalrNetwork
from training.smalr.pretrain import pretrain_latent
from training.smalr.tower import SmalrTower
from training.smalr.vocabulary import build_word_list, caption_word_ids, to_vocab
from training.smalr.word_vectors import word_features
from training.tower.space import fit_image_space

METHODS = ("smalr", "hem", "la")


@dataclass(kw_only=True)
class SmalrConfig(Schedule):
    unused = ("steps", "warmup", "beta1")

    data: Path
    out: Path
    cache_dir: Path
    settings: Settings  # encoders are built from it (models folder, device, backend)
    langs: list[str]
    method: str = "smalr"
    split: str = "train"
    holdout: float = 0.1  # share of the training images held out for early stopping
    max_images: int | None = None
    captions_per_lang: int | None = None
    image_encoder: str = "efficientnet-lite2"
    image_space_from: Path | None = None  # reuse a tower's image space so existing indexes stay valid
    word_features: str = "encoder:muse"
    k_specific: int = 5000
    n_latent: int = 40000
    word_dim: int = 200
    hidden_dim: int = 256
    joint_dim: int = 256
    pretrain_epochs: int = 5
    epochs: int = 20  # SMALR's own defaults of two schedule fields
    patience: int = 3
    explore_p: float = 0.2
    explore_m: int = 20
    mask_rate: float = 0.2
    top_n: int = 10  # most violated negatives per anchor in every triplet loss (the paper's 10)
    lambdas: tuple[float, float, float] = (1e-4, 1e-6, 5e-2)  # λ2 (mask), λ3 (adv), λ4 (nc)
    command: str = ""
    history: list[dict[str, float]] = field(default_factory=list)


@dataclass
class SmalrResult:
    tower: SmalrTower
    best_epoch: int
    heldout: dict[str, Any]
    parameters: dict[str, int]
    seconds: float


def train_smalr(config: SmalrConfig) -> SmalrResult:
    if config.method not in METHODS:
        raise ValueError(f"unknown SMALR method {config.method!r}; choose one of: {', '.join(METHODS)}")
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    image_encoder = encoders.build_image_encoder(config.settings, config.image_encoder)
    split = prepare_split(
        config.data, config.split, config.langs, image_encoder, None, config.cache_dir,
        captions_per_lang=config.captions_per_lang, max_images=config.max_images,
    )  # fmt: skip
    n_images = len(split.images)
    held = np.zeros(n_images, dtype=bool)
    held[rng.permutation(n_images)[: round(config.holdout * n_images)]] = True
    train_rows = np.flatnonzero(~held[split.caption_image])
    held_rows = np.flatnonzero(held[split.caption_image])
    texts, langs = split.caption_text, split.caption_lang
    k = 0 if config.method == "la" else config.k_specific
    words = build_word_list([texts[i] for i in train_rows], langs[train_rows].tolist(), k)
    features = word_features(words.words, config.word_features, config.settings, config.cache_dir)
    caption_words = caption_word_ids(words, [texts[i] for i in train_rows], langs[train_rows].tolist())
    latent = pretrain_latent(
        features, words.n_specific, caption_words, split.caption_image[train_rows], langs[train_rows],
        min(config.n_latent, max(words.n_rare, 1)), config.word_dim, config.pretrain_epochs, config.batch_size,
        config.lr, config.seed, config.explore_p, config.explore_m, config.top_n,
    )  # fmt: skip
    vocab = to_vocab(words, latent.assignment, len(latent.latent))
    ids, lengths = vocab.batch(texts, langs.tolist())
    space = fit_image_space("center-l2", split.image_features[~held], config.image_space_from)
    image_vectors = torch.from_numpy(space.apply(split.image_features))
    net = SmalrNetwork(
        vocab, torch.from_numpy(features[: words.n_specific]), latent.latent, latent.project,
        image_vectors.shape[1], config.hidden_dim, config.joint_dim,
    )  # fmt: skip
    optimizer = torch.optim.Adam(net.parameters(), lr=config.lr)
    lang_index = {lang: i for i, lang in enumerate(vocab.languages)}
    lang_ids = torch.tensor([lang_index.get(lang, 0) for lang in langs.tolist()])
    batches = DistinctImageBatches(
        split.caption_image[train_rows], langs[train_rows], config.batch_size, config.seed, partners=True
    )
    best: tuple[float, int, dict[str, Any]] = (-1.0, 0, copy.deepcopy(net.state_dict()))
    for epoch in range(1, config.epochs + 1):
        net.train()
        losses = []
        for rows, image_index, partners in tqdm(batches, desc=f"{config.method} epoch {epoch}", leave=False):
            assert partners is not None
            step = _step_loss(
                config, net, ids, lengths, lang_ids, image_vectors, train_rows, rows, image_index, partners
            )
            optimizer.zero_grad()
            step.backward()
            optimizer.step()
            net.retract()
            losses.append(float(step.detach()))
        score, _ = heldout_recalls(net, ids, lengths, split.caption_image, langs, image_vectors, held_rows)
        config.history.append({"epoch": epoch, "loss": float(np.mean(losses)), "heldout_rsum": score})
        tqdm.write(f"{config.method} epoch {epoch}: loss {np.mean(losses):.4f}  held-out rsum {score:.3f}")
        if score > best[0]:
            best = (score, epoch, copy.deepcopy(net.state_dict()))
        elif epoch - best[1] >= config.patience:
            tqdm.write(f"early stop: no held-out improvement for {config.patience} epochs (best epoch {best[1]})")
            break
    net.load_state_dict(best[2])
    net.eval()
    _, heldout = heldout_recalls(net, ids, lengths, split.caption_image, langs, image_vectors, held_rows)
    tower = net.export(image_encoder.name, space.to_config(), config.method)
    parameters = {"training": net.trainable_parameters(config.method == "smalr"), "query_time": tower.parameter_count()}
    result = SmalrResult(tower, best[1], heldout, parameters, time.perf_counter() - started)
    _save(result, config, latent.history, words.n_specific, words.n_rare)
    return result


def _step_loss(
    config: SmalrConfig,
    net: SmalrNetwork,
    ids: np.ndarray,
    lengths: np.ndarray,
    lang_ids: torch.Tensor,
    image_vectors: torch.Tensor,
    train_rows: np.ndarray,
    rows: np.ndarray,
    image_index: np.ndarray,
    partners: np.ndarray,
) -> torch.Tensor:
    """Eq. (4) on one batch: each image with a caption ``a`` and, where it has one, ``b`` in another language."""
    paired = np.flatnonzero(partners >= 0)
    first, second = train_rows[rows], train_rows[partners[paired]]
    both = np.concatenate([first, second])
    batch_ids, batch_lengths = padded(ids, lengths, both)
    universal, sentence = net.encode(batch_ids, batch_lengths)
    texts = F.normalize(sentence, dim=-1)
    images = net.images(image_vectors[image_index])
    n = len(first)
    top = config.top_n
    loss = bidirectional_triplet_loss(images, texts[:n], top_n=top)
    if len(paired) < 2:
        return loss
    loss = 0.5 * (loss + bidirectional_triplet_loss(images[paired], texts[n:], top_n=top))
    _lambda_mask, lambda_adv, lambda_nc = config.lambdas
    u_first, u_second = F.normalize(universal[paired], dim=-1), F.normalize(universal[n:], dim=-1)
    nc = neighbourhood_loss(u_first, u_second, top_n=top) + neighbourhood_loss(texts[paired], texts[n:], top_n=top)
    loss = loss + lambda_nc * nc
    loss = loss + lambda_adv * net.adversary(universal, lang_ids[torch.from_numpy(both)])
    if config.method != "smalr":
        return loss
    masked_ids = mask_words(batch_ids, batch_lengths, config.mask_rate, net.mask_id)
    masked_universal, masked_sentence = net.encode(masked_ids, batch_lengths)
    i, j = paired, n + np.arange(len(paired))  # the two captions of each paired image
    loss = loss + config.lambdas[0] * (
        net.mclm_universal(masked_universal[i], masked_universal[j], universal[i], universal[j])
        + net.mclm_sentence(masked_sentence[i], masked_sentence[j], sentence[i], sentence[j])
    )
    masked_texts = F.normalize(masked_sentence, dim=-1)
    loss_masked = bidirectional_triplet_loss(images, masked_texts[:n], top_n=top)
    return loss + 0.5 * (loss_masked + bidirectional_triplet_loss(images[paired], masked_texts[n:], top_n=top))


@torch.no_grad()
def heldout_recalls(
    net: SmalrNetwork,
    ids: np.ndarray,
    lengths: np.ndarray,
    caption_image: np.ndarray,
    langs: np.ndarray,
    image_vectors: torch.Tensor,
    rows: np.ndarray,
) -> tuple[float, dict[str, Any]]:
    """Sum of t2i + i2t R@1/5/10 over languages on the held-out images, scored as the served tower scores."""
    if len(rows) == 0:
        return 0.0, {}
    net.eval()
    images_held = np.unique(caption_image[rows])
    position = {int(image): k for k, image in enumerate(images_held)}
    queries = torch.cat(
        [net.query_vectors(*padded(ids, lengths, rows[s : s + 1024])) for s in range(0, len(rows), 1024)]
    )
    pool = image_vectors[torch.from_numpy(images_held)].numpy()
    report = {}
    for lang in sorted(set(langs[rows].tolist())):
        mine = np.flatnonzero(langs[rows] == lang)
        truth = np.array([position[int(caption_image[rows[m]])] for m in mine])
        report[lang] = language_recalls(pool, queries[torch.from_numpy(mine)].numpy(), truth)
    net.train()
    return float(sum(recall_sum(block) for block in report.values())), report


def _save(
    result: SmalrResult, config: SmalrConfig, pretrain_history: list[float], n_specific: int, n_rare: int
) -> None:
    recipe = {
        key: (str(value) if isinstance(value, Path) else value)
        for key, value in vars(config).items()
        if key not in ("cache_dir", "settings", "out", "command", "history", "data", *config.unused)
    }
    training = {
        "recipe": recipe,
        "best_epoch": result.best_epoch,
        "history": config.history,
        "pretrain_history": pretrain_history,
        "vocabulary": {
            "specific_words": n_specific,
            "rare_words": n_rare,
            "latent_tokens": result.tower.vocab.n_latent,
        },
        "heldout": result.heldout,
        "parameters": result.parameters,
        "seconds": round(result.seconds, 1),
        "command": config.command,
    }
    result.tower.save_pretrained(config.out, extra={"training": training})
