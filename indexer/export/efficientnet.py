"""EfficientNet-Lite → ONNX: the eager model's pooled features as one graph, the classifier head as numpy arrays.

The graph takes preprocessed pixels (N, 3, S, S) and returns the 1280-d pooled features, exactly what
:meth:`EfficientNetLiteEncoder.predict` returns; the 1000-way head (a single linear layer) is applied in numpy
on features that may come from the features cache, so it is stored apart (``head.npz``).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

FEATURES_FILE = "features.onnx"
HEAD_FILE = "head.npz"
OPSET = 17


def export_efficientnet_lite(name: str, folder: Path) -> dict[str, Any]:
    import torch

    from indexer.encoders.efficientnet import _VARIANTS, load_efficientnet_lite

    model = load_efficientnet_lite(name)

    class PooledFeatures(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, pixels: torch.Tensor) -> torch.Tensor:
            return self.model.extract_features(pixels).mean(dim=(2, 3))

    size = _VARIANTS[name][0]
    example = torch.zeros(2, 3, size, size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and shape-inference chatter
        torch.onnx.export(
            PooledFeatures().eval(),
            (example,),
            str(folder / FEATURES_FILE),
            input_names=["pixels"],
            output_names=["features"],
            dynamic_axes={"pixels": {0: "batch"}, "features": {0: "batch"}},
            opset_version=OPSET,
            dynamo=False,  # the TorchScript exporter: one self-contained file, no onnxscript needed
        )
    head = model._fc
    np.savez(
        folder / HEAD_FILE,
        weight=head.weight.detach().numpy().astype(np.float32),
        bias=head.bias.detach().numpy().astype(np.float32),
    )
    return {"model": name, "input_size": size, "opset": OPSET}
