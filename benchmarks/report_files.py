"""One measurement's result files: ``OUT.json`` (the result, every figure) and ``OUT.md`` (its page), beside each other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_report(out: Path, result: dict[str, Any], page: str) -> None:
    """Write ``result`` to OUT.json and ``page`` to OUT.md, then print the page."""
    out.with_suffix(".json").write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(page, encoding="utf-8")
    print(page)
