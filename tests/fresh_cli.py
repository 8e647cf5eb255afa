"""``polyglot ARGS`` in a fresh interpreter, as a user's command runs: its exit code, its output, and whether torch
(or other modules) got imported (the CLI start-up tests: tests/cli/test_cli_startup.py, tests/cli/test_search_startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_polyglot(args: list[str], env: dict[str, str]) -> tuple[int, str, bool]:
    """``polyglot ARGS`` in a new interpreter: exit code, output, and whether torch got imported."""
    status, output, imported = polyglot_imports(args, env, ["torch"])
    return status, output, "torch" in imported


def polyglot_imports(args: list[str], env: dict[str, str], modules: list[str]) -> tuple[int, str, set[str]]:
    """``polyglot ARGS`` in a new interpreter: exit code, output, and which of ``modules`` it imported."""
    code = (
        "import json, sys\n"
        "from app.cli import main\n"
        f"sys.argv = ['polyglot', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit as exit_:\n    status = exit_.code or 0\nelse:\n    status = 0\n"
        f"print('IMPORTED', json.dumps(sorted(set({modules!r}) & set(sys.modules))), 'STATUS', status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    last = done.stdout.strip().splitlines()[-1].split(" ")
    return int(last[-1]), done.stdout + done.stderr, set(json.loads(last[1]))


def clean_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("POLYGLOT_")}
    return {**env, "POLYGLOT_HOME": str(home), "COLUMNS": "100"}
