"""The poster's three protocols as learning curves (``polyglot translator curves``), and their Figure 3 plot.

On-boarding a language with N of its own training captions (N = 100 … all):

* **FS**: the language's sentence embeddings + a tower of the pivot's architecture, randomly initialised;
* **T1**: embeddings + a Translator randomly initialised + the pivot tower's weights;
* **T2**: embeddings + the Translator fitted on the lexicon (``polyglot translator fit``) + the pivot tower;

all trained on the N captions with the pivot recipe (InfoNCE, batches of distinct images). Reference points: the
pivot tower zero-shot (no map, no caption: what the service does today when the encoders share a space) and T2
with no caption (the lexicon map alone). Model selection (early stopping) uses the captions of a fixed set of
held-out *training* images, evaluated from step 0, so a fine-tune never ends worse there than where it started;
the dev split only reports: text→image and image→text R@1/5/10 in the language, pool = the dev images.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from indexer.tower import TextTower
from training.data.prepared import PreparedSplit
from training.data.sampler import DistinctImageBatches
from training.evaluation.evaluate import evaluate_vectors
from training.evaluation.retrieval_metrics import recall_sum
from training.losses import create_loss
from training.schedule import Schedule
from training.tower.space import tower_outputs
from training.translator.model import TranslatedTower

PROTOCOLS = ("FS", "T1", "T2")


@dataclass(kw_only=True)
class CurveSettings(Schedule):
    unused = ("epochs", "warmup", "beta1")

    sizes: list[int] = field(default_factory=lambda: [100, 300, 1000, 3000, 10000, 0])  # 0 = all
    holdout_images: int = 100
    steps: int = 1500  # the curves' own defaults of two schedule fields: a step budget per point
    eval_every: int = 50
    patience: int = 4
    temperature: float = 0.03


def subset(split: PreparedSplit, rows: np.ndarray) -> PreparedSplit:
    """The split restricted to caption ``rows`` (the image pool unchanged)."""
    return PreparedSplit(
        images=split.images,
        image_features=split.image_features,
        caption_image=split.caption_image[rows],
        caption_lang=split.caption_lang[rows],
        caption_text=[split.caption_text[i] for i in rows],
        text_embeddings=split.text_embeddings[rows],
        caption_source=split.caption_source[rows] if split.caption_source is not None else None,
    )


def recalls(model: torch.nn.Module, split: PreparedSplit, images: np.ndarray, lang: str) -> dict[str, Any]:
    model.eval()
    with torch.no_grad():
        texts = torch.nn.functional.normalize(model(torch.from_numpy(split.text_embeddings)), dim=-1).numpy()
    model.train()
    return dict(evaluate_vectors(images, texts, split, langs=[lang], with_c2c=False).report["languages"][lang])


def train_rows(
    model: torch.nn.Module,
    train: PreparedSplit,
    rows: np.ndarray,
    targets: torch.Tensor,
    check: PreparedSplit,
    check_images: np.ndarray,
    lang: str,
    settings: CurveSettings,
) -> tuple[int, float]:
    """Train ``model`` on caption ``rows``; keep the weights best on ``check`` (step 0 included).
    Returns (best step, best held-out sum of recalls)."""
    torch.manual_seed(settings.seed)
    loss_fn = create_loss("infonce", temperature=settings.temperature)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings.lr, betas=(0.9, 0.999))
    sentences = torch.from_numpy(train.text_embeddings)
    best = (recall_sum(recalls(model, check, check_images, lang)), 0, copy.deepcopy(model.state_dict()))
    step, since = 0, 0
    batch = min(settings.batch_size, len(set(train.caption_image[rows].tolist())))
    while step < settings.steps and since < settings.patience:
        batches = DistinctImageBatches(
            train.caption_image[rows], train.caption_lang[rows], max(batch, 2), settings.seed + step
        )
        for picked, image_index, _ in batches:
            text = tower_outputs("center-l2", model(sentences[rows[picked]]))
            loss = loss_fn(text, targets[image_index], torch.from_numpy(image_index))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            if step % settings.eval_every == 0:
                score = recall_sum(recalls(model, check, check_images, lang))
                if score > best[0]:
                    best, since = (score, step, copy.deepcopy(model.state_dict())), 0
                else:
                    since += 1
            if step >= settings.steps or since >= settings.patience:
                break
    model.load_state_dict(best[2])
    return best[1], best[0]


def build(protocol: str, pivot: TextTower, m: np.ndarray | None, source_dim: int) -> torch.nn.Module:
    if protocol == "FS":
        config = {k: v for k, v in pivot.config.items()}
        config["input_dim"] = source_dim
        return TextTower(**config)
    tower = copy.deepcopy(pivot)
    tower.train()
    if protocol == "T1":
        torch.manual_seed(0)
        return TranslatedTower(
            torch.nn.Linear(source_dim, pivot.config["input_dim"], bias=False).weight.detach(), tower
        )
    if m is None:
        raise ValueError("T2 needs a fitted Translator (polyglot translator fit)")
    return TranslatedTower(m, tower)


def learning_curves(
    pivot: TextTower,
    m: np.ndarray | None,
    train: PreparedSplit,
    dev: PreparedSplit,
    lang: str,
    settings: CurveSettings,
    protocols: tuple[str, ...] = PROTOCOLS,
    progress: Any = print,
) -> dict[str, Any]:
    """``{"sizes", "curves": {protocol: [{"n", "t2i", "i2t", "best_step"}]}, "zero_shot", "T2_no_captions"}``."""
    space = pivot.image_space
    images_train = space.apply(train.image_features)
    dev_images = space.apply(dev.image_features)
    targets = torch.from_numpy(images_train)
    rng = np.random.default_rng(settings.seed)
    captioned = np.unique(train.caption_image)
    held = set(rng.permutation(captioned)[: min(settings.holdout_images, max(1, len(captioned) // 5))].tolist())
    is_held = np.array([image in held for image in train.caption_image.tolist()])
    check = subset(train, np.flatnonzero(is_held))
    pool = rng.permutation(np.flatnonzero(~is_held))
    source_dim = train.text_embeddings.shape[1]
    result: dict[str, Any] = {
        "lang": lang,
        "pool": len(dev.images),
        "train_captions": len(pool),
        "check_captions": len(check.caption_text),
    }
    if source_dim == pivot.config["input_dim"]:
        result["zero_shot"] = recalls(copy.deepcopy(pivot), dev, dev_images, lang)
    if m is not None:
        result["T2_no_captions"] = recalls(TranslatedTower(m, copy.deepcopy(pivot)), dev, dev_images, lang)
    sizes = sorted({len(pool) if n == 0 or n > len(pool) else n for n in settings.sizes})
    result["sizes"] = sizes
    result["curves"] = {}
    for protocol in protocols:
        points = []
        for n in sizes:
            model = build(protocol, pivot, m, source_dim)
            step, held_score = train_rows(model, train, pool[:n], targets, check, images_train, lang, settings)
            block = recalls(model, dev, dev_images, lang)
            points.append(
                {"n": n, "t2i": block["t2i"], "i2t": block["i2t"], "best_step": step, "check_rsum": held_score}
            )
            progress(f"{protocol} n={n}: t2i R@10 {block['t2i']['r10']:.3f} (best step {step})")
        result["curves"][protocol] = points
    return result


def plot(result: dict[str, Any], path: Path) -> None:
    """Figure 3 of the poster: recalls against the number of training captions; first row text→image R@1/5/10,
    second row image→text R@1/5/10; reference points as horizontal lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(12, 7), sharex=True)
    colours = {"FS": "tab:red", "T1": "tab:blue", "T2": "tab:green"}
    for row, direction in enumerate(("t2i", "i2t")):
        for col, k in enumerate(("r1", "r5", "r10")):
            ax = axes[row][col]
            seen: set[str] = set()
            for protocol, points in result["curves"].items():
                base = protocol.split()[0]  # "T2 (lr 1e-4)" takes T2's colour, dashed when T2 is already drawn
                style = "o--" if base in seen else "o-"
                seen.add(base)
                xs, ys = [p["n"] for p in points], [p[direction][k] for p in points]
                ax.plot(xs, ys, style, color=colours.get(base), label=protocol)
            for name, style in (("zero_shot", "k--"), ("T2_no_captions", "g:")):
                if name in result:
                    ax.axhline(
                        result[name][direction][k], linestyle=style[1:], color=style[0], label=name.replace("_", " ")
                    )
            ax.set_xscale("log")
            ax.set_title(f"{'text→image' if direction == 't2i' else 'image→text'} R@{k[1:]}")
            ax.grid(alpha=0.3)
            if row == 1:
                ax.set_xlabel(f"{result['lang']} training captions")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Translator protocols, {result['lang']} (dev pool {result.get('pool', '')})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
