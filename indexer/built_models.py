"""Model files the project builds itself from bundled weights (ONNX exports), with a checksummed manifest.

``polyglot models build`` (run by ``polyglot models fetch``, i.e. by the set-up command) exports the bundled
PyTorch/4-bit weights to ONNX into ``MODELS_DIR/<key>/`` and writes ``manifest.json`` there: every file's
sha256 and size, the sha256 of the weights it came from and the library versions that produced it. Nothing is
downloaded. An exporter's output depends on the torch/onnxruntime versions, so the checksum is recorded at build
time rather than pinned in the code; encoders verify the files against the manifest before loading them, so a
truncated or edited file is an error that names the command to run, never silently different vectors.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from indexer.atomic import atomic_write_json
from indexer.model_files import ChecksumError, ModelFileMissingError, sha256_file

log = logging.getLogger(__name__)

MANIFEST = "manifest.json"
FORMAT = 1


@dataclass(frozen=True)
class BuiltModel:
    """One exported model: ``build(folder)`` writes ``files`` into an empty folder and returns provenance."""

    key: str
    files: tuple[str, ...]
    source: Callable[[], Path]  # the bundled weights it is derived from (their sha256 goes in the manifest)
    build: Callable[[Path], dict[str, Any]]

    def folder(self, models_dir: Path) -> Path:
        return Path(models_dir) / self.key


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads((folder / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None


def verify(
    model: BuiltModel, models_dir: Path, *, full: bool = True, hashed: Collection[str] | None = None
) -> dict[str, Path]:
    """The model's files by name, checked against the manifest: sizes, and the sha256 when ``full`` — of the files
    named in ``hashed`` only, when given (a caller that reads one graph of several need not hash the others)."""
    folder = model.folder(models_dir)
    manifest = read_manifest(folder)
    hint = "run `polyglot models build` (part of `polyglot models fetch`; it exports the bundled weights, offline)"
    if manifest is None or manifest.get("format") != FORMAT:
        raise ModelFileMissingError(f"{folder / MANIFEST} is missing or outdated: {hint}")
    paths: dict[str, Path] = {}
    for name in model.files:
        path, entry = folder / name, manifest["files"].get(name)
        if entry is None or not path.exists():
            raise ModelFileMissingError(f"{path} is missing: {hint}")
        hash_it = full and (hashed is None or name in hashed)
        if path.stat().st_size != entry["size"] or (hash_it and sha256_file(path) != entry["sha256"]):
            raise ChecksumError(f"{path} does not match its checksum in {folder / MANIFEST}: {hint}")
        paths[name] = path
    return paths


def is_built(model: BuiltModel, models_dir: Path) -> bool:
    """Cheap check (sizes only) used to pick a backend; loading verifies the checksums."""
    try:
        verify(model, models_dir, full=False)
    except (ModelFileMissingError, ChecksumError):
        return False
    return True


def build(model: BuiltModel, models_dir: Path, *, force: bool = False) -> Path:
    """Export ``model`` unless an intact build from the same source weights is there; atomic per folder."""
    folder = model.folder(models_dir)
    source_sha = sha256_file(model.source())
    manifest = read_manifest(folder)
    if not force and manifest is not None and manifest.get("source_sha256") == source_sha:
        try:
            verify(model, models_dir)
            log.info("built model present", extra={"key": model.key})
            return folder
        except (ModelFileMissingError, ChecksumError):
            pass
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{model.key}.", dir=folder.parent) as tmp:
        staging = Path(tmp) / model.key
        staging.mkdir()
        provenance = model.build(staging)
        files = {
            name: {"sha256": sha256_file(staging / name), "size": (staging / name).stat().st_size}
            for name in model.files
        }
        atomic_write_json(
            staging / MANIFEST,
            {"format": FORMAT, "key": model.key, "source_sha256": source_sha, "files": files, **provenance},
        )
        # Swap the whole folder: readers see the old build or the new one, never a mix of files.
        old = Path(tmp) / "old"
        if folder.exists():
            folder.rename(old)
        staging.rename(folder)
        shutil.rmtree(old, ignore_errors=True)
    return folder


def library_versions() -> dict[str, str]:
    import onnxruntime
    import torch

    return {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__}
