"""What a test does when a tool it needs (Chromium, a docker compose client) is absent: under CI (`CI` set, as
.ci/run and hosted runners do) it fails with the reason, since scripts/test.sh installs those tools or stops;
elsewhere (a developer's partial run) it is skipped with the same reason. A shared helper, not a test."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def tool_missing(reason: str) -> NoReturn:
    """Fail (under CI) or skip (elsewhere) the running test because a tool it needs is absent."""
    if under_ci():
        pytest.fail(f"{reason}; CI must provide it (scripts/test.sh installs it or stops)", pytrace=False)
    pytest.skip(reason)
