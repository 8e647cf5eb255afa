"""The tower folder's ``README.md``: what it maps, what it was trained on, how well it does, how to rebuild it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from indexer.atomic import atomic_write_bytes
from indexer.tower import TextTower


def results_table(report: dict[str, Any]) -> list[str]:
    pool = report["pool_images"]
    lines = [
        f"| lang | queries | t2i R@1 | t2i R@5 | t2i R@10 | i2t R@1 | i2t R@5 | i2t R@10 | mR | (pool {pool} images) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for lang, block in report["languages"].items():
        t2i, i2t = block["t2i"], block["i2t"]
        cells = [t2i["r1"], t2i["r5"], t2i["r10"], i2t["r1"], i2t["r5"], i2t["r10"], block["mR"]]
        lines.append(f"| {lang} | {block['queries']} | " + " | ".join(f"{c:.3f}" for c in cells) + " | |")
    lines.append(f"\nA (mean mR over languages) = {report['A']:.3f} on a pool of {pool} images.")
    return lines


def write_model_card(folder: Path, tower: TextTower, training: dict[str, Any], unsupported: Sequence[str]) -> None:
    config = tower.config
    recipe = training["recipe"]
    lines = [
        "# Polyglot Image Search text tower",
        "",
        f"Maps `{config['text_encoder']}` sentence embeddings ({config['input_dim']}-d) of a caption or query in any "
        f"language the encoder covers into the `{config['image_encoder']}` image space ({config['output_dim']}-d, "
        f"image space `{config['image_space']['kind']}`, fingerprint `{training['image_space_fingerprint']}`). "
        "Architecture: Aggarwal et al., *Towards Zero-shot Cross-lingual Image Retrieval and Tagging* (§3.1): "
        f"blocks FC→dropout→ReLU→l2-norm, widths {[*config['hidden_dims'], config['output_dim']]}, "
        f"dropouts {config['dropouts']}, final ReLU {config['final_relu']}.",
        "",
        "## Training",
        "",
        f"- data: `{recipe['data']}`, split `{recipe['split']}`, languages {', '.join(config['languages'] or [])}"
        + (
            f" (first {recipe['captions_per_lang']} caption(s) per image and language)"
            if recipe.get("captions_per_lang")
            else ""
        )
        + (f", a fixed random subset of {recipe['max_images']} images" if recipe.get("max_images") else ""),
        f"- loss `{recipe['loss']}` {recipe['loss_options'] or '(defaults)'}, training space `{recipe['space']}`",
        f"- Adam lr {recipe['lr']} β1 {recipe['beta1']}, batch {recipe['batch_size']} distinct images, seed {recipe['seed']}",
        f"- best epoch {training['best_epoch']} of {len(training['history'])} (early stopping on the "
        f"`{recipe['dev_split']}` sum of recalls, patience {recipe['patience']}); {training['seconds']:.0f} s wall-clock",
    ]
    if recipe.get("c2c_weight"):
        lines.append(
            f"- plus the caption–caption loss (Kádár et al.'s c2c) between two captions of each image in different "
            f"languages, weight {recipe['c2c_weight']}, τ {recipe.get('c2c_temperature', 0.05)}"
        )
    if recipe.get("bridge_from"):
        lines.append(
            f"- trained on bridged captions: the language bridge of `{recipe['bridge_from']}` (shipped in this "
            "folder as bridge.json + bridge.safetensors) rewrites its languages' embeddings, as at search time; "
            "the dev numbers below are with it"
        )
    if unsupported:
        lines.append(f"- note: `{config['text_encoder']}` does not declare {', '.join(unsupported)}")
    if training.get("command"):
        lines += ["", "Rebuild with:", "", "```", training["command"], "```"]
    if "dev" in training:
        lines += ["", f"## Retrieval on `{recipe['dev_split']}`", "", *results_table(training["dev"])]
        if training.get("dev_c2c"):
            pairs = ", ".join(f"{pair} {value:.3f}" for pair, value in training["dev_c2c"].items())
            lines += ["", f"Caption→caption R@1 (first caption per image, tower space): {pairs}."]
    atomic_write_bytes(Path(folder) / "README.md", ("\n".join(lines) + "\n").encode("utf-8"))
