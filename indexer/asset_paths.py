"""Where the shipped assets are, and the names of the files the project builds: the bottom floor of the house.

It imports nothing of the project, so settings, encoders, the student, the exporters and the index can all read
these paths without importing each other (this module is why ``settings → embedders → encoder factory →
settings`` and ``export registry → student → e5 export → export registry`` are no longer circles).
"""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
SHIPPED_STUDENT = ASSETS / "student"  # the served text side (docs/model-card.md; its README is the training run's card)
SHIPPED_TAGS = ASSETS / "tags"  # tag vocabularies, words only: <lang>.tsv (docs/tagging.md, its README.md)
SHIPPED_ALIGNMENTS = ASSETS / "align"  # caption alignments over mUSE, one folder per language pair
RESEARCH_TOWERS = ("tower", "tower-muse")  # the research MLP towers, kept to measure and compare
# Optional text encoders that ship their own tower: POLYGLOT_TEXT_ENCODER=<name> serves it when POLYGLOT_TOWER_PATH
# is unset (EmbeddingGemma: better outside English, ~25x the student's CPU a query; docs/embeddinggemma.md).
ENCODER_TOWERS = {"embeddinggemma": ASSETS / "tower-embeddinggemma"}

# Files `polyglot models build` writes into MODELS_DIR/<key>/ (names only: no torch or onnx needed to read them).
E5_FP32_FILE = "e5-small.onnx"
E5_INT8_FILE = "e5-small-int8.onnx"
STUDENT_FP32_FILE = "student.onnx"
STUDENT_INT8_FILE = "student-int8.onnx"
STUDENT_TRUNK_DELTA = "trunk-delta.safetensors"  # what training changed in a student's e5 layers
# Prefix of the int8 calibration's tensors in that file (indexer/export/e5_int8.py): each Linear's largest input.
STUDENT_INT8_RANGES = "int8_input_absmax."
# Linears the int8 export keeps in fp32 (their measured sensitivity, one number each): indexer/export/e5_int8.py
STUDENT_INT8_FP32 = "int8_fp32."
# GPTQ's corrections of each Linear's int8 weight levels (int8, one per weight): indexer/export/e5_int8.py
STUDENT_INT8_ROUNDING = "int8_gptq."
# Activation ranges of the int8 image CNN (`polyglot models calibrate` writes them from training photos; `polyglot
# models build` quantises the fp32 export with them, so every machine builds the same int8 graph, offline).
IMAGE_INT8_RANGES = {"efficientnet-lite2": ASSETS / "image-int8" / "efficientnet-lite2-ranges.json"}


def shipped_tower_path(text_encoder: str | None = None) -> Path:
    """The served text side unless POLYGLOT_TOWER_PATH says otherwise: the tower shipped for ``text_encoder``
    (POLYGLOT_TEXT_ENCODER) when there is one, else the trained student (``indexer/assets/student``,
    :mod:`indexer.student`; docs/model-card.md)."""
    return ENCODER_TOWERS.get(text_encoder or "", SHIPPED_STUDENT)


def research_tower_path(name: str = "tower") -> Path:
    """A shipped research tower (MLP over frozen encoders; nothing serves it by default): ``tower``
    (``muse+e5-small`` with its Czech language bridge) or ``tower-muse`` (mUSE only)."""
    if name not in RESEARCH_TOWERS:
        raise ValueError(f"no research tower {name!r}; shipped: {', '.join(RESEARCH_TOWERS)}")
    return ASSETS / name
