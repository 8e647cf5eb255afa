"""A child Python process that keeps an index open and answers one JSON line per command line: the two-writer tests
(tests/collection/test_two_writers.py, tests/captions/test_two_caption_writers.py) run two of them side by side."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest

TESTS_DIR = Path(__file__).resolve().parent


class ProcessHolder:
    """Runs ``script`` (which prints ``open`` once ready, then answers each stdin line, and stops on ``quit``) with
    ``env`` added to this process's environment; ``what`` names it when it dies."""

    def __init__(self, script: str, env: dict[str, str], what: str) -> None:
        self.what = what
        self.process = subprocess.Popen(
            [sys.executable, "-c", script],
            env={
                **os.environ,
                "TESTS_DIR": str(TESTS_DIR),  # the script puts it on sys.path for the shared fakes
                "PYTHONPATH": str(TESTS_DIR.parent),
                "OMP_NUM_THREADS": "1",
                "PYTHONIOENCODING": "utf-8",
                **env,
            },
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._line() == "open"

    def _line(self) -> str:
        stdout: IO[str] | None = self.process.stdout
        assert stdout is not None
        line = stdout.readline()
        if not line:
            _, stderr = self.process.communicate(timeout=30)
            pytest.fail(f"the {self.what} holder died: {stderr}")
        return line.strip()

    def ask(self, command: str) -> dict[str, Any]:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(command + "\n")
        stdin.flush()
        return dict(json.loads(self._line()))

    def close(self) -> None:
        if self.process.poll() is None:
            _, stderr = self.process.communicate("quit\n", timeout=60)
            assert self.process.returncode == 0, stderr
