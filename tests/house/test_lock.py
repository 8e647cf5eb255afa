"""Reproducible installs: requirements.lock and requirements-dev.lock pin every dependency pyproject.toml names
exactly, both set-up commands and CI install from them, and scripts/lock.sh (the documented way to refresh them)
writes them from the environment the tests run in."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DEV_EXTRAS = ("dev", "laser", "cluster")


def read_lock(name: str) -> dict[str, tuple[str, str]]:
    """{canonical name: (line, pinned version)} of a lock file; every line must be one exact pin."""
    pins: dict[str, tuple[str, str]] = {}
    for line in (ROOT / name).read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        req = Requirement(line)
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version, f"{name}: {line!r}"
        assert not req.url and not req.extras, f"{name}: {line!r} is not a plain pin"
        key = canonicalize_name(req.name)
        assert key not in pins, f"{name}: {req.name} pinned twice"
        pins[key] = (line, specs[0].version)
    return pins


def declared(*extras: str) -> list[Requirement]:
    lines = list(PROJECT["dependencies"])
    for extra in extras:
        lines += PROJECT["optional-dependencies"][extra]
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize(("lock", "extras"), [("requirements.lock", ()), ("requirements-dev.lock", DEV_EXTRAS)])
def test_the_lock_pins_every_declared_dependency_within_its_range(lock: str, extras: tuple[str, ...]) -> None:
    pins = read_lock(lock)
    for req in declared(*extras):
        key = canonicalize_name(req.name)
        assert key in pins, f"{lock} lacks {req.name} (pyproject: {req}); refresh it with scripts/lock.sh"
        line, version = pins[key]
        assert req.specifier.contains(Version(version), prereleases=True), f"{lock}: {line!r} is outside {req}"
        if req.marker is not None:  # a platform-bound dependency keeps its marker in the lock
            assert str(req.marker) in line, f"{lock}: {line!r} lost the marker of {req}"
    assert canonicalize_name(PROJECT["name"]) not in pins, f"{lock} pins the project itself"


def test_the_runtime_lock_is_the_dev_lock_less_the_extras() -> None:
    runtime, dev = read_lock("requirements.lock"), read_lock("requirements-dev.lock")
    differing = {name: (line, dev.get(name)) for name, line in runtime.items() if dev.get(name) != line}
    assert not differing, f"requirements.lock and requirements-dev.lock disagree: {differing}"
    assert len(dev) > len(runtime)


def test_torch_stays_on_the_cpu_release_bootstrap_installs_first() -> None:
    for lock in ("requirements.lock", "requirements-dev.lock"):
        assert read_lock(lock)["torch"][1] == "2.13.0", lock


def fake_project(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of scripts/bootstrap.sh beside a .venv whose python and polyglot only write down their arguments."""
    project = tmp_path / "clone"
    (project / "scripts").mkdir(parents=True)
    (project / "scripts" / "bootstrap.sh").write_bytes((ROOT / "scripts" / "bootstrap.sh").read_bytes())
    log = tmp_path / "calls.log"
    bin_dir = project / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("python", "polyglot"):
        shim = bin_dir / tool
        shim.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\n')
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return project, log


@pytest.mark.parametrize(("argument", "lock"), [((), "requirements.lock"), (("dev",), "requirements-dev.lock")])
def test_bootstrap_installs_the_lock_then_the_project_without_resolving(
    tmp_path: Path, argument: tuple[str, ...], lock: str
) -> None:
    project, log = fake_project(tmp_path)
    done = subprocess.run(
        ["bash", str(project / "scripts" / "bootstrap.sh"), *argument], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    installs = [line.split(" install ", 1)[1] for line in log.read_text().splitlines() if " pip install " in line]
    installs = [" ".join(word for word in spec.split() if word != "--quiet") for spec in installs]
    assert installs == ["--upgrade pip", "torch==2.13.0", f"-r {lock}", "--no-deps -e ."], installs
    assert "python -m pip check" in log.read_text(), "bootstrap.sh does not check the installed set"


def test_both_set_up_commands_and_ci_go_through_bootstrap() -> None:
    assert "scripts/bootstrap.sh\n" in (ROOT / "scripts" / "run.sh").read_text()
    assert "scripts/bootstrap.sh dev\n" in (ROOT / "scripts" / "test.sh").read_text()
    assert "exec scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_lock_sh_refreshes_the_locks_from_an_environment(tmp_path: Path) -> None:
    """The refresh the docs describe, run on the environment of this test run: it writes the committed files byte
    for byte, i.e. the locks hold exactly the versions these tests run with."""
    out = tmp_path / "locks"
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "lock.sh"), "--from-venv", sys.prefix, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    for name in ("requirements.lock", "requirements-dev.lock"):
        written, committed = (out / name).read_text(), (ROOT / name).read_text()
        assert written == committed, (
            f"{name} differs from what this environment holds; run scripts/bootstrap.sh dev (to install the lock) "
            "or scripts/lock.sh (to refresh it)"
        )
