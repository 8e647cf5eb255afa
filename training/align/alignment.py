"""``polyglot train align --method cca|pcca|dcca-noi|dpcca-a|dpcca-b``: align two languages' frozen sentence features,
conditioned on the frozen image features (the DPCCA family, :mod:`training.align.cca` and :mod:`training.align.dcca`).

Training triplets: for each image of the split, its Multi30K task-1 caption in language x (e.g. English), its
translation in language y (German) and the image's CNN features, centred, l2-normalised and compressed by PCA to
the text dimensionality (the paper's §6). A fixed random share of the training images (``holdout``) is kept out
for model selection (the deep variants stop early on it); the dev split only reports. Evaluation is the paper's
Table 2: caption→caption R@1 and BLEU+1 both ways on the dev task-1 captions, with no image at query time.

Saved as ``alignment.json`` (method, languages, encoder, dimensions, report) + ``alignment.safetensors``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.numpy import load as load_numpy
from safetensors.numpy import save as save_numpy

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.captions.alignment import CONFIG_NAME, WEIGHTS_NAME, save_linear
from indexer.encoders import build_image_encoder, build_text_encoder
from indexer.settings import Settings
from training.align.c2c_eval import c2c_table
from training.align.cca import LinearAlignment, fit_cca, fit_pcca, pca
from training.align.dcca import VARIANTS, Branch, NoiConfig, NoiTrainer, minibatches
from training.data.prepared import PreparedSplit, prepare_split

METHODS = ("raw", "cca", "pcca", *VARIANTS)  # raw: the frozen features themselves, the reference


@dataclass
class AlignConfig:
    data: Path
    out: Path
    cache_dir: Path
    settings: Settings  # encoders are built from it (models folder, device, backend, e5 precision)
    method: str = "pcca"
    langs: tuple[str, str] = ("en", "de")
    text_encoder: str = "muse"
    image_encoder: str = "efficientnet-lite2"
    split: str = "train"
    dev_split: str | None = "dev"
    holdout: float = 0.1
    dim: int = 128
    eps: float = 1e-3
    noi: NoiConfig = field(default_factory=NoiConfig)  # the schedule (deep methods; patience for all)
    command: str = ""


@dataclass
class Triplets:
    x: np.ndarray  # (n, D_x) sentence features of language x
    y: np.ndarray  # (n, D_y)
    z: np.ndarray  # (n, D_z) image features of the image both describe
    x_texts: list[str]
    y_texts: list[str]


def triplets(split: PreparedSplit, x_lang: str, y_lang: str) -> Triplets:
    """One (x caption, y caption, image) per image having both: the task-1 captions (else the first ones)."""
    first: dict[str, dict[int, int]] = {x_lang: {}, y_lang: {}}
    sources = split.caption_source if split.caption_source is not None else np.array([""] * len(split.caption_lang))
    for preferred in (True, False):  # task-1 rows first, then the first caption of images still missing one
        for row, (image, lang, source) in enumerate(zip(split.caption_image, split.caption_lang, sources, strict=True)):
            if lang in first and (source == "multi30k-task1") == preferred:
                first[str(lang)].setdefault(int(image), row)
    images = sorted(set(first[x_lang]) & set(first[y_lang]))
    if len(images) < 10:
        raise ValueError(f"only {len(images)} images have captions in both {x_lang} and {y_lang}")
    xr, yr = [first[x_lang][i] for i in images], [first[y_lang][i] for i in images]
    feats = split.image_features[images].astype(np.float64)
    return Triplets(
        x=split.text_embeddings[xr],
        y=split.text_embeddings[yr],
        z=feats,
        x_texts=[split.caption_text[r] for r in xr],
        y_texts=[split.caption_text[r] for r in yr],
    )


class ImageView:
    """The shared view: image features centred, l2-normalised, then PCA-compressed (fitted on training images)."""

    def __init__(self, z: np.ndarray, dim: int) -> None:
        self.centre = z.mean(axis=0)
        self.mean, self.components = pca(self._norm(z), dim)

    def _norm(self, z: np.ndarray) -> np.ndarray:
        z = z - self.centre
        return z / np.maximum(np.linalg.norm(z, axis=1, keepdims=True), 1e-12)

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return ((self._norm(z) - self.mean) @ self.components).astype(np.float32)


@dataclass
class FittedAlignment:
    method: str
    linear: LinearAlignment | None = None
    deep: NoiTrainer | None = None
    history: list[dict[str, float]] = field(default_factory=list)

    def project(self, side: str, features: np.ndarray) -> np.ndarray:
        if self.linear is not None:
            return self.linear.project_x(features) if side == "x" else self.linear.project_y(features)
        assert self.deep is not None
        return self.deep.project(side, features)


def _r1(alignment: FittedAlignment, data: Triplets) -> float:
    table = c2c_table(
        alignment.project("x", data.x), alignment.project("y", data.y), data.x_texts, data.y_texts, "x", "y", bleu=False
    )
    return float(np.mean([row["r1"] for row in table.values()]))


def fit(config: AlignConfig, train: Triplets, check: Triplets | None) -> FittedAlignment:
    """Fit the configured method on ``train``; the deep variants stop early on ``check`` (mean R@1 both ways)."""
    if config.method == "raw":
        eye = np.eye(train.x.shape[1])
        if train.x.shape[1] != train.y.shape[1]:
            raise ValueError("method raw compares the features as they are: both languages need one encoder")
        zero = np.zeros(train.x.shape[1])
        return FittedAlignment("raw", linear=LinearAlignment(zero, zero, eye, eye, np.ones(train.x.shape[1])))
    if config.method == "cca":
        return FittedAlignment("cca", linear=fit_cca(train.x, train.y, config.dim, config.eps))
    if config.method == "pcca":
        return FittedAlignment("pcca", linear=fit_pcca(train.x, train.y, train.z, config.dim, config.eps))
    if config.method not in VARIANTS:
        raise ValueError(f"unknown method {config.method!r}; choose one of: {', '.join(METHODS)}")
    noi = NoiConfig(**{**asdict(config.noi), "variant": config.method, "dim": config.dim, "eps": config.eps})
    trainer = NoiTrainer(noi, train.x.shape[1], train.y.shape[1], train.z.shape[1])
    alignment = FittedAlignment(config.method, deep=trainer)
    x, y, z = (torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)) for a in (train.x, train.y, train.z))
    rng = np.random.default_rng(noi.seed)
    best: tuple[float, int, dict[str, Any]] = (-1.0, 0, {})
    for epoch in range(1, noi.epochs + 1):
        losses = [
            trainer.step(x[b], y[b], None if config.method == "dcca-noi" else z[b])
            for b in minibatches(len(x), noi.batch_size, rng)
        ]
        score = _r1(alignment, check) if check is not None else -float(np.mean(losses))
        alignment.history.append({"epoch": epoch, "loss": float(np.mean(losses)), "holdout_r1": score})
        if score > best[0]:
            state = {k: v.clone() for k, v in {**_prefixed(trainer.f, "f."), **_prefixed(trainer.g, "g.")}.items()}
            best = (score, epoch, state)
        elif epoch - best[1] >= noi.patience:
            break
    _restore(trainer, best[2])
    return alignment


def _prefixed(module: torch.nn.Module, prefix: str) -> dict[str, torch.Tensor]:
    return {prefix + k: v for k, v in module.state_dict().items()}


def _restore(trainer: NoiTrainer, state: dict[str, torch.Tensor]) -> None:
    for name, branch in (("f.", trainer.f), ("g.", trainer.g)):
        branch.load_state_dict({k[len(name) :]: v for k, v in state.items() if k.startswith(name)})


def split_holdout(data: Triplets, share: float, seed: int = 0) -> tuple[Triplets, Triplets | None]:
    if share <= 0:
        return data, None
    order = np.random.default_rng(seed).permutation(len(data.x))
    cut = round(len(order) * (1 - share))

    def take(rows: np.ndarray) -> Triplets:
        return Triplets(
            data.x[rows], data.y[rows], data.z[rows], [data.x_texts[i] for i in rows], [data.y_texts[i] for i in rows]
        )

    return take(order[:cut]), take(order[cut:])


def run(config: AlignConfig) -> dict[str, Any]:
    """Prepare features, fit, evaluate (holdout and dev), save; returns the report."""
    started = time.perf_counter()
    x_lang, y_lang = config.langs
    image_encoder = build_image_encoder(config.settings, config.image_encoder)
    text_encoder = build_text_encoder(config.settings, config.text_encoder)

    def load(split: str) -> Triplets:
        prepared = prepare_split(config.data, split, [x_lang, y_lang], image_encoder, text_encoder, config.cache_dir)
        return triplets(prepared, x_lang, y_lang)

    everything = load(config.split)
    view = ImageView(everything.z, everything.x.shape[1])
    everything.z = view(everything.z)
    train, check = split_holdout(everything, config.holdout)
    alignment = fit(config, train, check)
    report: dict[str, Any] = {"method": config.method, "langs": list(config.langs), "train_triplets": len(train.x)}
    if check is not None:
        report["holdout"] = _table(alignment, check, x_lang, y_lang)
    if config.dev_split:
        report["dev"] = _table(alignment, load(config.dev_split), x_lang, y_lang)
    if alignment.linear is not None:
        report["correlations_top5"] = [round(float(c), 4) for c in alignment.linear.correlations[:5]]
    report["history"] = alignment.history
    report["seconds"] = round(time.perf_counter() - started, 1)
    save(alignment, config, report)
    return report


def _table(alignment: FittedAlignment, data: Triplets, x_lang: str, y_lang: str) -> dict[str, dict[str, float]]:
    x, y = alignment.project("x", data.x), alignment.project("y", data.y)
    return c2c_table(x, y, data.x_texts, data.y_texts, x_lang, y_lang)


def save(alignment: FittedAlignment, config: AlignConfig, report: dict[str, Any]) -> None:
    meta = {
        "method": config.method,
        "langs": list(config.langs),
        "text_encoder": config.text_encoder,
        "dim": config.dim,
        "noi": config.noi.recipe() if alignment.deep is not None else None,
        "command": config.command,
        "report": report,
    }
    if alignment.linear is not None:  # the form the service reads (indexer.captions.alignment)
        save_linear(config.out, alignment.linear, meta)
        return
    assert alignment.deep is not None
    config.out.mkdir(parents=True, exist_ok=True)
    tensors = {
        k: v.detach().numpy().copy()
        for k, v in {**_prefixed(alignment.deep.f, "f."), **_prefixed(alignment.deep.g, "g.")}.items()
    }
    atomic_write_bytes(config.out / WEIGHTS_NAME, save_numpy(tensors))
    atomic_write_json(config.out / CONFIG_NAME, meta)


class SavedAlignment:
    """An alignment read back: ``project(lang, sentence_features)`` into the shared space."""

    def __init__(self, folder: Path) -> None:
        self.meta = json.loads((Path(folder) / CONFIG_NAME).read_text(encoding="utf-8"))
        tensors = load_numpy((Path(folder) / WEIGHTS_NAME).read_bytes())
        self.langs: list[str] = self.meta["langs"]
        self.text_encoder: str = self.meta["text_encoder"]
        self.linear: LinearAlignment | None = None
        self.branches: dict[str, Branch] = {}
        if "w" in tensors:
            self.linear = LinearAlignment.from_tensors(tensors)
            return
        noi = self.meta["noi"]
        for side in ("f", "g"):
            state = {k[2:]: torch.from_numpy(v) for k, v in tensors.items() if k.startswith(side + ".")}
            in_dim = state["net.0.weight"].shape[1]
            branch = Branch(in_dim, [in_dim] * noi["hidden_layers"], self.meta["dim"], noi["activation"])
            branch.load_state_dict(state)
            branch.eval()
            self.branches[side] = branch

    def project(self, lang: str, features: np.ndarray) -> np.ndarray:
        if lang not in self.langs:
            raise ValueError(f"this alignment is for {'/'.join(self.langs)}, not {lang!r}")
        x_side = lang == self.langs[0]
        if self.linear is not None:
            return self.linear.project_x(features) if x_side else self.linear.project_y(features)
        branch = self.branches["f" if x_side else "g"]
        with torch.no_grad():
            return (branch(torch.from_numpy(np.asarray(features, dtype=np.float32))) - branch.mean).numpy()
