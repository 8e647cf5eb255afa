"""Where the lab's shipped assets are: the research towers and caption alignments of docs/results.md, kept to
measure and compare against the served student (nothing serves them unless POLYGLOT_TOWER_PATH names one). They
are not in the product's package data or its Docker image."""

from __future__ import annotations

from pathlib import Path

from indexer.captions.alignment import CONFIG_NAME as ALIGNMENT_CONFIG

LAB_ASSETS = Path(__file__).resolve().parent / "assets"
SHIPPED_ALIGNMENTS = LAB_ASSETS / "align"  # caption alignments over mUSE, one folder per language pair
RESEARCH_TOWERS = ("tower", "tower-muse")  # MLP towers over frozen encoders


def research_tower_path(name: str = "tower") -> Path:
    """A shipped research tower (MLP over frozen encoders): ``tower`` (``muse+e5-small`` with its Czech language
    bridge) or ``tower-muse`` (mUSE only)."""
    if name not in RESEARCH_TOWERS:
        raise ValueError(f"no research tower {name!r}; shipped: {', '.join(RESEARCH_TOWERS)}")
    return LAB_ASSETS / name


def shipped_alignments() -> list[Path]:
    """The caption alignments shipped with the lab (``training/assets/align/<x>-<y>/``); the lab registers them
    with the encoder factory, so the service reads them when their encoder (mUSE) is loaded anyway."""
    folder = SHIPPED_ALIGNMENTS
    return sorted(p for p in folder.iterdir() if (p / ALIGNMENT_CONFIG).exists()) if folder.is_dir() else []
