"""One way to open an ONNX Runtime session: graph optimisation, thread counts, CPU or CUDA provider."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ENCODER_BACKENDS = ("auto", "onnx", "torch")


def providers(device: str) -> list[str]:
    """``cuda[:N]`` → the CUDA provider (with CPU for the ops it lacks); refuses when onnxruntime has none."""
    import onnxruntime as ort

    if not device.startswith("cuda"):
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        raise RuntimeError(
            f"device {device!r} requested but this onnxruntime has no CUDA provider (install onnxruntime-gpu), "
            "or set POLYGLOT_ENCODER_BACKEND=torch"
        )
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


def cuda_available_for_onnx() -> bool:
    import onnxruntime as ort

    return "CUDAExecutionProvider" in ort.get_available_providers()


def open_session(path: Path, *, threads: int | None = None, device: str = "cpu", spinning: bool = False) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # ENABLE_ALL adds the layout (NCHWc) and fusion passes that make the CNN ~3x faster than eager torch; they are
    # applied at load (a second or two), never saved, because their output is specific to this CPU.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle intra-op threads spin for a while after each call by default: on a 2-core machine shared with the
    # HTTP server and FAISS that spinning is stolen from the other requests. Batch jobs may keep it.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.log_severity_level = 3
    if device.startswith("cuda"):
        index = device.partition(":")[2] or "0"
        provider_list: list[Any] = [("CUDAExecutionProvider", {"device_id": int(index)}), "CPUExecutionProvider"]
        providers(device)  # the clear error when the provider is absent
    else:
        provider_list = providers(device)
    return ort.InferenceSession(str(path), options, providers=provider_list)
