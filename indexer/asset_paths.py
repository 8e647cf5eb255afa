"""Where the shipped assets are, and the names of the files the project builds: the bottom floor of the house.

It imports nothing of the project, so settings, encoders, the student, the exporters and the index can all read
these paths without importing each other (this module is why ``settings → embedders → encoder factory →
settings`` and ``export registry → student → e5 export → export registry`` are no longer circles).
"""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parent / "assets"
SHIPPED_STUDENT = ASSETS / "student"  # the served text side (docs/student.md; its README is the model card)
SHIPPED_TAGS = ASSETS / "tags"  # tag vocabularies, words only: <lang>.tsv (docs/tagging.md, its README.md)
# The concept lexicon: WordNet noun concepts with their names in many languages (indexer/concepts/lexicon.py;
# built by training/concepts/build.py; its README is the data card, NOTICE the sources' licences).
SHIPPED_CONCEPTS = ASSETS / "concepts"
# Optional text encoders that ship their own tower: POLYGLOT_TEXT_ENCODER=<name> serves it when POLYGLOT_TOWER_PATH
# is unset (EmbeddingGemma: better outside English, ~25x the student's CPU a query; docs/embeddinggemma.md).
ENCODER_TOWERS = {"embeddinggemma": ASSETS / "tower-embeddinggemma"}

# A research tower's language bridge beside its weights (the lab's training/bridge.py reads and writes it; the
# encoder factory looks for it to know that a tower has one).
BRIDGE_CONFIG = "bridge.json"

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
    :mod:`indexer.student`; docs/student.md)."""
    return ENCODER_TOWERS.get(text_encoder or "", SHIPPED_STUDENT)
