"""The product apart from the lab: what a user runs loads nothing of ``training``.

- no module under ``app/`` or ``indexer/`` names ``training`` in an import, anywhere in it (read with ``ast``:
  lazy imports inside functions and ``TYPE_CHECKING`` blocks count);
- the service (``import app.main``) and the product's commands, run in a fresh interpreter, import no
  ``training`` module; the lab's commands and encoders still come in where it is installed (here: the checkout).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from fresh_cli import REPO, clean_env, polyglot_imports

PRODUCT = ("app", "indexer")


def lab_imports(root: Path = REPO) -> list[str]:
    """``file:line`` of every import of ``training`` (absolute: the product has no relative way to it)."""
    found = []
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                names = (
                    [alias.name for alias in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                if any(name == "training" or name.startswith("training.") for name in names):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def test_the_reader_finds_a_lab_import_however_it_is_written(tmp_path: Path) -> None:
    for name, text in {
        "app/a.py": "import training.encoders\n",
        "indexer/b.py": "def f():\n    from training import bridge\n",
        "indexer/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from training.cli import x\n",
        "indexer/d.py": "import trainingwheels\nfrom . import training\n# import training\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert lab_imports(tmp_path) == ["app/a.py:1", "indexer/b.py:2", "indexer/c.py:3"]


def test_no_product_module_imports_the_lab() -> None:
    assert lab_imports() == []


def loaded_lab_modules(code: str) -> list[str]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code + "\nimport sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'training'))",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return list(ast.literal_eval(done.stdout.strip().splitlines()[-1]))


def test_serving_loads_nothing_of_the_lab() -> None:
    assert loaded_lab_modules("import app.main") == []


def test_the_served_student_loads_nothing_of_the_lab() -> None:
    """The text side built as the service builds it (the shipped student), with the encoder registry asked for
    the product's encoders only."""
    code = (
        "from indexer.settings import Settings\n"
        "from indexer.encoders import build_image_encoder, build_text_side\n"
        "build_text_side(Settings()); build_image_encoder(Settings())"
    )
    assert loaded_lab_modules(code) == []


@pytest.mark.parametrize("command", [["index", "--help"], ["search", "--help"], ["serve", "--help"], ["tag", "--help"]])
def test_a_product_command_loads_nothing_of_the_lab(command: list[str], tmp_path: Path) -> None:
    status, output, imported = polyglot_imports(command, clean_env(tmp_path), ["training"])
    assert status == 0, output
    assert imported == set(), output


def test_the_lab_plugs_in_where_it_is_installed(tmp_path: Path) -> None:
    """The checkout has the lab: its commands are listed after the product's, and a research encoder builds."""
    status, output, imported = polyglot_imports(["--help"], {**clean_env(tmp_path), "COLUMNS": "200"}, ["training"])
    assert status == 0 and imported == {"training"}, output
    panels = [line for line in output.splitlines() if line.startswith("╭─ ")]
    assert [p.split()[1] for p in panels] == ["Options", "Photos", "Lab"], panels
    assert output.index("│ serve") < output.index("│ evaluate")
    code = (
        "from indexer.settings import Settings\n"
        "from indexer.encoders import build_text_encoder\n"
        "print(type(build_text_encoder(Settings(), 'muse+e5-small')).__name__)"
    )
    assert "training.encoders.hybrid" in loaded_lab_modules(code)


# What the Docker image is: the product with no lab to import (its metadata may still name the entry points).
WITHOUT_LAB = """
import importlib.abc, sys
class NoLab(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "training" or name.startswith("training."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, NoLab())
"""


def test_without_the_lab_the_product_runs_and_says_what_is_missing() -> None:
    code = WITHOUT_LAB + (
        "import sys\n"
        "from app.cli import all_commands\n"
        "print('COMMANDS', ' '.join(all_commands()))\n"
        "from indexer.settings import Settings\n"
        "from indexer.encoders import UnknownEncoderError, build_text_encoder, build_text_side\n"
        "build_text_side(Settings())\n"
        "for spec in ('muse', 'muse+e5-small'):\n"
        "    try:\n"
        "        build_text_encoder(Settings(), spec)\n"
        "    except UnknownEncoderError as exc:\n"
        "        print('ERROR', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[1:] == ["index", "search", "serve", "tag", "tags", "captions", "models"]
    assert lines[1] == "ERROR unknown text encoder 'muse'; choose one of: e5-small, embeddinggemma"
    assert lines[2] == "ERROR no installed package builds hybrid text encoders like 'muse+e5-small'"
