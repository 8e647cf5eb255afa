"""Write the dependency locks from the distributions installed in a virtual environment.

Run by scripts/lock.sh with the interpreter of the environment to read (it must hold the project's runtime
dependencies and its dev, laser and cluster extras). Writes two files of exact `name==version` pins:

    requirements.lock       what `pip install .` needs (the runtime closure of pyproject's dependencies)
    requirements-dev.lock   the same plus the dev, laser and cluster extras (what scripts/test.sh installs)

Both come from the same environment, so every version in requirements.lock is the one in requirements-dev.lock,
i.e. the one the test suite ran with. The closure follows each distribution's own Requires-Dist (with extras and
environment markers evaluated here), so a stray package installed by hand into the environment is not locked.
A local version label (torch's `+cpu`) is dropped: `torch==2.13.0` matches the CPU build bootstrap.sh installs
first, and the same pin still resolves where only the public release exists.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections import deque
from importlib import metadata
from pathlib import Path

# packaging: installed with the dev extras (pytest needs it), which the environment read here must hold.
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

DEV_EXTRAS = ("dev", "laser", "cluster")
HEADER = """\
# {title}
# Exact versions of every dependency, the ones the test suite passed with ({platform}, CPython {python}).
# Installed by scripts/bootstrap.sh ({used_by}), then the project itself with `pip install --no-deps -e .`.
# Do not edit by hand. To refresh after changing pyproject.toml's dependencies (or to move to newer releases):
#     scripts/lock.sh                  # resolves pyproject.toml afresh in a throw-away virtual environment
#     scripts/lock.sh --from-venv .venv   # or: lock what an existing environment holds
# then run scripts/test.sh and commit both lock files with the change.
"""


def _installed() -> dict[str, metadata.Distribution]:
    found: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found.setdefault(canonicalize_name(name), dist)
    return found


def _wanted(req: Requirement, extra: str) -> bool:
    return req.marker is None or req.marker.evaluate({"extra": extra})


def closure(roots: list[Requirement], installed: dict[str, metadata.Distribution], project: str) -> dict[str, str]:
    """Every distribution `roots` needs, with its installed version: {display name: version}."""
    pinned: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    queue: deque[tuple[Requirement, str]] = deque((req, "") for req in roots)
    missing: list[str] = []
    while queue:
        req, via_extra = queue.popleft()
        if not _wanted(req, via_extra):
            continue
        key = canonicalize_name(req.name)
        dist = installed.get(key)
        if dist is None:
            missing.append(str(req))
            continue
        version = Version(dist.version)
        if not req.specifier.contains(version, prereleases=True):
            raise SystemExit(f"error: {req} is required but {dist.metadata['Name']} {version} is installed")
        if key != project:
            pinned[dist.metadata["Name"]] = version.public
        for extra in ("", *sorted(canonicalize_name(e) for e in req.extras)):
            if (key, extra) in seen:
                continue
            seen.add((key, extra))
            for line in dist.requires or []:
                queue.append((Requirement(line), extra))
    if missing:
        raise SystemExit("error: not installed in this environment: " + ", ".join(sorted(set(missing))))
    return pinned


def write_lock(path: Path, pins: dict[str, str], markers: dict[str, str], title: str, used_by: str) -> None:
    lines = [
        HEADER.format(
            title=title,
            platform=f"{sys.platform} {_machine()}",
            python=".".join(map(str, sys.version_info[:2])),
            used_by=used_by,
        )
    ]
    for name in sorted(pins, key=lambda n: canonicalize_name(n)):
        marker = markers.get(canonicalize_name(name))
        lines.append(f"{name}=={pins[name]}" + (f"; {marker}" if marker else "") + "\n")
    path.write_text("".join(lines), encoding="utf-8")


def _machine() -> str:
    import platform

    return platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--out", type=Path, default=None, help="folder for the lock files (default: the project)")
    args = parser.parse_args()
    pyproject = tomllib.loads((args.project / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    project = canonicalize_name(pyproject["name"])
    runtime = [Requirement(line) for line in pyproject["dependencies"]]
    extras = [Requirement(line) for extra in DEV_EXTRAS for line in pyproject["optional-dependencies"][extra]]
    # A platform marker written in pyproject (milvus: Linux x86-64 and macOS only) stays on its pin.
    markers = {str(canonicalize_name(r.name)): str(r.marker) for r in runtime + extras if r.marker is not None}
    installed = _installed()
    out = args.out or args.project
    out.mkdir(parents=True, exist_ok=True)
    write_lock(
        out / "requirements.lock",
        closure(runtime, installed, project),
        markers,
        "Runtime dependencies of polyglot-image-search.",
        "scripts/run.sh; `scripts/bootstrap.sh`",
    )
    write_lock(
        out / "requirements-dev.lock",
        closure(runtime + extras, installed, project),
        markers,
        "Runtime dependencies plus the dev, laser and cluster extras of polyglot-image-search.",
        "scripts/test.sh and CI; `scripts/bootstrap.sh dev`",
    )


if __name__ == "__main__":
    main()
