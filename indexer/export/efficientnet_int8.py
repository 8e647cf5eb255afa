"""EfficientNet-Lite2's features graph in int8: ONNX Runtime's static quantisation with shipped activation ranges.

Why: on the 2-core CPU the fp32 network is the largest cost of indexing a 12-Mpx photo (benchmarks/
indexing-profile.md); the int8 graph runs it in ~0.65x the CPU time on AVX2 (docs/image-int8.md).

How: weights int8, one scale per output channel (symmetric); activations uint8 with the min/max ranges of
``IMAGE_INT8_RANGES`` (ORT's calibration cache format, measured once on Flickr training photos by ``polyglot
models calibrate``), as QLinearConv operators. ``polyglot models build`` quantises the fp32 export with those
ranges, so every machine builds the same graph without any photo (the build is deterministic: same ranges and
fp32 export, same bytes).

What it costs: the stem and the 1280-channel head convolution stay fp32; quantising them took the cosine to the
fp32 features from a mean of 0.987 to 0.951 on dev photos, for ~0.2 ms. With them in fp32: cosine min 0.946,
mean 0.987 (image space: median 0.986), and served recall within 0.005 of fp32 on the Flickr and wide dev sets,
including an index where half the photos have fp32 vectors and half int8 (docs/image-int8.md). The vectors stay
interchangeable: an index and its features cache may hold both.
"""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any

from indexer.asset_paths import IMAGE_INT8_RANGES
from indexer.export.efficientnet import FEATURES_FILE, export_efficientnet_lite


def fp32_nodes(model_path: Path) -> list[str]:
    """The convolutions left in fp32: the stem (3 input channels: int8 costs accuracy and saves nothing) and the
    head (its 1280 channels are the features themselves)."""
    import onnx

    model = onnx.load(str(model_path))
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "Conv" and ("_conv_stem" in node.name or "_conv_head" in node.name)
    ]


def quantize_features(fp32_path: Path, int8_path: Path, ranges: Path, calibration: Any = None) -> None:
    """Write the int8 graph of ``fp32_path``. ``ranges``: the activation ranges (ORT's calibration cache);
    ``calibration`` (an ORT ``CalibrationDataReader``) measures them first and writes ``ranges`` when given.

    The graph is first pre-processed (ORT's basic optimisations, saved): the exporter writes TF's "same"
    padding as a Pad before each strided convolution; fp32 ORT fuses it at load, but a Pad left in front of a
    QLinearConv stays an operator of its own (~0.9 ms a photo). Calibration and build share this step, so the
    ranges name the tensors of the graph that is quantised."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if calibration is None and not ranges.is_file():
        raise FileNotFoundError(f"{ranges} is missing: run `polyglot models calibrate` to measure the ranges")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # the quantiser's progress chatter
    try:
        with tempfile.TemporaryDirectory(prefix="int8-pre-") as scratch:
            fused = Path(scratch) / "fused.onnx"
            quant_pre_process(str(fp32_path), str(fused), skip_symbolic_shape=True)
            quantize_static(
                str(fused),
                str(int8_path),
                calibration,
                quant_format=QuantFormat.QOperator,
                per_channel=True,
                activation_type=QuantType.QUInt8,
                weight_type=QuantType.QInt8,
                nodes_to_exclude=fp32_nodes(fused),
                extra_options={"ActivationSymmetric": False, "WeightSymmetric": True},
                calibration_cache_path=ranges,
            )
    finally:
        root.setLevel(level)


def export_efficientnet_lite_int8(name: str, folder: Path) -> dict[str, Any]:
    """The fp32 export (into a scratch folder) quantised with the shipped ranges into ``folder``."""
    ranges = IMAGE_INT8_RANGES[name]
    with tempfile.TemporaryDirectory(prefix="int8-export-") as scratch:
        fp32 = export_efficientnet_lite(name, Path(scratch))
        quantize_features(Path(scratch) / FEATURES_FILE, folder / FEATURES_FILE, ranges)
    return {**fp32, "int8": "static, per-channel weights, uint8 activations; stem and head fp32", "ranges": ranges.name}
