"""One way to open an ONNX Runtime session: graph optimisation, thread counts, CPU or CUDA provider."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable
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


def cpu_fingerprint() -> str:
    """This machine's CPU, as far as ONNX Runtime's CPU-specific graph rewrites depend on it: a digest of the model
    name and feature flags (``/proc/cpuinfo``; empty where there is none, e.g. macOS: then the version alone)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    wanted = [line for line in lines if line.split(":")[0].strip() in ("model name", "flags", "Features")]
    return hashlib.sha256("\n".join(sorted(set(wanted))).encode()).hexdigest()[:12]


KEPT_GRAPH = "graph.onnx"  # a kept optimised copy's graph, in the copy's own folder
KEPT_WEIGHTS = "graph.onnx.data"  # ... and its weights beside it, which ONNX Runtime maps instead of copying


def kept_optimized_path(path: Path, folder: Path) -> Path:
    """Where :func:`open_session` keeps ``path``'s optimised graph (a folder of its own, with the weights beside
    it): named by the file's size and modification time, ONNX Runtime's version and the CPU, which are what the
    graph depends on (another of either is another copy)."""
    import onnxruntime as ort

    stat = Path(path).stat()
    name = f"{Path(path).stem}-{stat.st_size}-{stat.st_mtime_ns}-ort{ort.__version__}-{cpu_fingerprint()}"
    return Path(folder) / name / KEPT_GRAPH


def open_session(
    path: Path,
    *,
    threads: int | None = None,
    device: str = "cpu",
    spinning: bool = False,
    optimized_dir: Path | None = None,
    check_source: Callable[[], object] | None = None,
) -> Any:
    """An ONNX Runtime session for the graph at ``path``. ``optimized_dir`` (CPU only): keep the graph as ONNX
    Runtime optimised it there the first time (``SessionOptions.optimized_model_filepath``) and open that copy
    afterwards without optimising again — for a one-shot command, the student's 12-layer graph opens in ~0.13 s of
    CPU instead of ~0.3 s (``polyglot search``); the same outputs (tests/cli/test_search_startup.py). The copy's
    weights are a file of their own beside its graph (ONNX Runtime's external initializers), which ONNX Runtime
    maps when it opens the copy instead of parsing them out of the graph and copying them (the student's 86 MB:
    ~0.06-0.09 s instead of ~0.15-0.24 s to open, a third of the system time; bit-identical outputs). A cache: a
    copy that cannot be written or read means the graph is optimised at load, as without it. ``check_source``:
    called before ONNX Runtime reads ``path`` itself, and only then (not when it opens a kept copy): the caller's
    checksum of the file."""
    import onnxruntime as ort

    if optimized_dir is None or device.startswith("cuda"):
        if check_source is not None:
            check_source()
        return ort.InferenceSession(str(path), _options(threads, spinning), providers=_providers(device))
    kept = kept_optimized_path(path, optimized_dir)
    if kept.is_file():
        options = _options(threads, spinning)
        # Its fusions and layouts are already applied for this CPU; optimising again would only cost the time.
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        with contextlib.suppress(Exception):  # onnxruntime's own errors (a torn copy): optimised again below
            return ort.InferenceSession(str(kept), options, providers=_providers(device))
    if check_source is not None:
        check_source()
    options = _options(threads, spinning)
    copy = kept.parent  # written whole in a folder of this process, then renamed: never seen half-written
    partial = copy.with_name(f".{copy.name}.{os.getpid()}.tmp")
    try:
        partial.mkdir(parents=True, exist_ok=True)
        options.optimized_model_filepath = str(partial / KEPT_GRAPH)
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", KEPT_WEIGHTS)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    except OSError:  # a read-only cache folder: optimised at every load, as without one
        options = _options(threads, spinning)
    session = ort.InferenceSession(str(path), options, providers=_providers(device))
    with contextlib.suppress(OSError):
        if (partial / KEPT_GRAPH).is_file() and (partial / KEPT_WEIGHTS).is_file():
            shutil.rmtree(copy, ignore_errors=True)  # a copy that did not open (or another process's, just kept)
            os.rename(partial, copy)
            # The same copy as one file with its weights inside (kept so before they were split out): garbage now.
            copy.with_name(f"{copy.name}.onnx").unlink(missing_ok=True)
    shutil.rmtree(partial, ignore_errors=True)
    return session


def _options(threads: int | None, spinning: bool) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    # ENABLE_ALL adds the layout (NCHWc) and fusion passes that make the CNN ~3x faster than eager torch; they are
    # applied at load (a second or two), and saved only by a caller that names a per-machine cache folder
    # (``optimized_dir``), because their output is specific to this CPU.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle intra-op threads spin for a while after each call by default: on a 2-core machine shared with the
    # HTTP server and FAISS that spinning is stolen from the other requests. Batch jobs may keep it.
    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    options.log_severity_level = 3
    return options


def _providers(device: str) -> list[Any]:
    if device.startswith("cuda"):
        index = device.partition(":")[2] or "0"
        providers(device)  # the clear error when the provider is absent
        return [("CUDAExecutionProvider", {"device_id": int(index)}), "CPUExecutionProvider"]
    return providers(device)
