"""``training/`` by family: the shared packages (data, losses, evaluation, the schedule, the research encoders and
query-time parts) import no family, and a family imports no other family (but the tower's training space, which
SMALR and the Translator reuse). The lab's plugins to the product (its commands, ``cli``, and what it registers
with the encoder factory, ``plugin``) sit above both and may import any of them."""

from __future__ import annotations

import ast
from pathlib import Path

TRAINING = Path(__file__).resolve().parents[2] / "training"
SHARED = {
    "data",
    "losses",
    "evaluation",
    "schedule",
    "encoders",
    "translation",
    "bridge",
    "glosses",
    "asset_paths",
    "concepts",  # the concept lexicon's builder and its name rules (the student's lexicon term reads them)
}
FAMILIES = {"tower", "student", "align", "smalr", "translator", "clc", "tag_vocab"}
REUSED = {"training.tower.space"}  # the space a tower is trained in: also SMALR's and the Translator's
PLUGINS = {"cli", "plugin"}  # what plugs the lab into the product: may import anything of it
DATA = {"assets"}  # the research towers' and alignments' weights


def imports() -> list[tuple[str, str, str]]:
    found = []
    for path in TRAINING.rglob("*.py"):
        parts = path.relative_to(TRAINING).with_suffix("").parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("training."):
                found.append((parts[0], node.module.split(".")[1], node.module))
    return found


def test_training_holds_packages_by_family_and_one_schedule() -> None:
    top = {p.stem for p in TRAINING.glob("*.py")} | {p.name for p in TRAINING.iterdir() if p.is_dir()}
    assert top - {"__init__", "__pycache__"} == SHARED | FAMILIES | PLUGINS | DATA


def test_shared_packages_import_no_family_and_families_not_each_other() -> None:
    found = imports()
    assert found, "no training imports found"
    for source, target, module in found:
        if source == target or source in PLUGINS:
            continue
        assert target in SHARED | FAMILIES, module
        if source in SHARED:
            assert target in SHARED, f"training.{source} imports {module}"
        elif target in FAMILIES:
            assert module in REUSED, f"training.{source} imports {module}"
