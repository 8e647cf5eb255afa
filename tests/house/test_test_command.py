"""scripts/test.sh never lets the browser or deployment tests be skipped for want of a tool: it installs a missing
docker-compose with apt-get, waiting for a dpkg lock another install holds, and stops with the reason when that
fails (it printed "the tests that need them will be skipped" and went on)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def executable(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def fake_clone(tmp_path: Path, apt_exit: int, mypy_exit: int = 0) -> tuple[Path, Path, dict[str, str]]:
    """scripts/test.sh beside stand-ins that write down their calls: bootstrap.sh, the .venv's ruff, mypy (exit
    ``mypy_exit``) and pytest, and apt-get (exit ``apt_exit``); PATH holds no docker and no docker-compose."""
    clone, calls = tmp_path / "clone", tmp_path / "calls.log"
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "test.sh", clone / "scripts" / "test.sh")
    executable(clone / "scripts" / "bootstrap.sh", f'echo "bootstrap $*" >> "{calls}"\n')
    (clone / ".venv" / "bin").mkdir(parents=True)
    for tool in ("ruff", "pytest"):
        executable(clone / ".venv" / "bin" / tool, f'echo "{tool} $*" >> "{calls}"\n')
    executable(
        clone / ".venv" / "bin" / "mypy",
        f'echo "mypy $*" >> "{calls}"\necho "mypy says {mypy_exit}"\nexit {mypy_exit}\n',
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "apt-get", f'echo "apt-get $*" >> "{calls}"\nexit {apt_exit}\n')
    executable(bin_dir / "id", "echo 0\n")  # as root, as CI runs it
    for tool in ("dirname", "nproc", "mkdir", "cat"):  # what the script needs besides
        (bin_dir / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    return clone, calls, {**os.environ, "PATH": str(bin_dir)}


@pytest.mark.parametrize("apt_exit", [100, 0])
def test_a_missing_docker_compose_is_installed_waiting_for_the_dpkg_lock_or_the_run_stops(
    tmp_path: Path, apt_exit: int
) -> None:
    clone, calls, env = fake_clone(tmp_path, apt_exit)
    done = subprocess.run(["/bin/bash", "scripts/test.sh", "-q"], cwd=clone, env=env, capture_output=True, text=True)
    log = calls.read_text().splitlines()
    apt = [line for line in log if line.startswith("apt-get")]
    assert apt and all("-o DPkg::Lock::Timeout=600" in line for line in apt), log
    assert "skipped" not in done.stderr
    if apt_exit:
        assert done.returncode != 0, done.stderr
        assert "error: could not install" in done.stderr and "docker-compose" in done.stderr, done.stderr
        assert not any(line.startswith(("pytest", "mypy")) for line in log), "the tests ran without docker-compose"
    else:
        assert done.returncode == 0, done.stderr
        assert any(" install " in line and "docker-compose" in line for line in apt), log
        # One pytest worker per core this process may use (what nproc counts), the caller's arguments after; mypy
        # beside them, its report after theirs.
        assert f"pytest -q -n {len(os.sched_getaffinity(0))} -q" in log and "mypy " in log, log
        assert done.stdout.rstrip().endswith("mypy says 0"), done.stdout


def test_a_type_error_fails_the_command_though_the_tests_pass(tmp_path: Path) -> None:
    clone, calls, env = fake_clone(tmp_path, apt_exit=0, mypy_exit=1)
    done = subprocess.run(["/bin/bash", "scripts/test.sh"], cwd=clone, env=env, capture_output=True, text=True)
    assert done.returncode == 1 and "mypy says 1" in done.stdout, (done.stdout, done.stderr)
    assert "error: mypy found type errors" in done.stderr
    assert any(line.startswith("pytest") for line in calls.read_text().splitlines())
