"""Headless Chromium as the browser tests (tests/web/) and the screenshot scripts (benchmarks/screenshot*.py) run
it: Debian's /usr/bin/chromium driven by Playwright, with one set of launch flags. A shared helper, not a test:
the scripts put tests/ on their path to import it, as they do for photo_samples."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
MISSING = "Chromium is not installed (apt-get install -y chromium)"


def launch_chromium(playwright: Any) -> Any:
    """A headless Chromium browser from a started ``sync_playwright()``."""
    # Chromium's singleton socket lives in TMPDIR and may not exceed 107 bytes: a short one under a long TMPDIR.
    env = {**os.environ, "TMPDIR": "/tmp"} if Path("/tmp").is_dir() else None
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, env=env)
