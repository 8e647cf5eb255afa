"""The walk of ``polyglot index add PHOTO``: which project modules run when one photo is added, in order, and how
often control crosses from one module into another (CONTRIBUTING.md, "The `index add` walk").

Runs the real CLI in this process (the bundled image encoder, a fresh index in a temporary ``POLYGLOT_HOME``)
twice: a first photo warms every import (lazy ones included), then a second photo is added under
``sys.setprofile`` (and ``threading.setprofile``: the ingest decodes in a worker thread). Every Python call whose
function lives in ``app/``, ``indexer/`` or ``training/`` is recorded; a *hop* is a call from one project module
into another (the nearest project frame up the stack is the caller; ``(entry)``: the CLI runner, or the start of a
worker thread).
Run from the repository root::

    .venv/bin/python benchmarks/walk_index_add.py --out benchmarks/walk_index_add.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_IMAGES = REPO.parent / "shared" / "data" / "m30k-f8k" / "images"
PACKAGES = ("app", "indexer", "training")


def project_module(filename: str, root: Path) -> str | None:
    """``indexer/store/ingest.py`` for a file of the project under ``root``, else None."""
    try:
        relative = Path(filename).resolve().relative_to(root)
    except ValueError:
        return None
    return str(relative) if relative.parts and relative.parts[0] in PACKAGES else None


class Walk:
    """Project modules in the order they first run, calls per module, and hops between modules."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.order: list[str] = []
        self.calls: Counter[str] = Counter()
        self.entries: Counter[str] = Counter()  # hops into a module
        self.hops: list[tuple[str, str]] = []
        self._modules: dict[str, str | None] = {}

    def _module(self, frame: FrameType) -> str | None:
        filename = frame.f_code.co_filename
        if filename not in self._modules:
            self._modules[filename] = project_module(filename, self.root)
        return self._modules[filename]

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        module = self._module(frame)
        if module is None:
            return
        caller = frame.f_back
        while caller is not None and self._module(caller) is None:
            caller = caller.f_back
        source = self._module(caller) if caller is not None else None
        if module not in self.calls:
            self.order.append(module)
        self.calls[module] += 1
        if source != module:
            self.entries[module] += 1
            self.hops.append((source or "(entry)", module))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=Path, default=DEFAULT_IMAGES)
    parser.add_argument(
        "--models", type=Path, default=REPO / "var" / "models", help="The built models (POLYGLOT_MODELS_DIR)."
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import indexer

    root = Path(indexer.__file__).resolve().parents[1]  # the tree actually imported (PYTHONPATH may point elsewhere)
    photos = sorted(args.images.iterdir())[:2]
    home = Path(tempfile.mkdtemp(prefix="walk-index-add-"))
    os.environ.update(
        POLYGLOT_HOME=str(home),
        POLYGLOT_MODELS_DIR=str(args.models.resolve()),
        OMP_NUM_THREADS="1",
    )
    from typer.testing import CliRunner

    from app.cli import cli

    runner = CliRunner()
    warm = runner.invoke(cli, ["index", "add", str(photos[0]), "--quiet"])
    assert warm.exit_code == 0, warm.output
    walk = Walk(root)
    began = time.perf_counter()
    threading.setprofile(walk)  # the decode worker the ingest starts is traced too
    sys.setprofile(walk)
    try:
        result = runner.invoke(cli, ["index", "add", str(photos[1]), "--quiet"])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    seconds = time.perf_counter() - began
    assert result.exit_code == 0 and "added 1" in result.output, result.output
    command = "benchmarks/walk_index_add.py " + " ".join(sys.argv[1:])
    lines = [
        "# The walk of `polyglot index add` of one photo",
        "",
        f"Command: `.venv/bin/python {command}` (tree: `{root}`), {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Second photo of a fresh index (imports warm), traced with `sys.setprofile` ({seconds:.1f} s traced): "
        f"**{len(walk.order)} project modules, {len(walk.hops)} hops** between them "
        f"(a hop: a call from one project module into another).",
        "",
        "| # | module (in the order it first runs) | calls | entered |",
        "| ---: | --- | ---: | ---: |",
    ]
    for number, module in enumerate(walk.order, 1):
        lines.append(f"| {number} | `{module}` | {walk.calls[module]} | {walk.entries[module]} |")
    crossings = Counter(walk.hops)
    lines += ["", "Hops by pair (caller → callee: times):", ""]
    lines += [f"- `{a}` → `{b}`: {n}" for (a, b), n in sorted(crossings.items(), key=lambda item: -item[1])]
    text = "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
