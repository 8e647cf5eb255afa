"""Expand what a user names on the command line into image paths plus optional per-image metadata.

* a folder: every file with an image suffix below it (recursive, sorted, hidden files skipped);
* a file with an image suffix: itself;
* a manifest (``.csv``, ``.jsonl``, ``.ndjson``): one image per row/line with a ``path`` column/key; relative
  paths are resolved against the manifest's folder. ``title``, ``caption`` and ``tags`` (a list, or a string
  split on ``,`` / ``;`` / ``|``) are recognised; any other non-empty column goes to ``extra``. A row whose title,
  caption or tags are over the bounds the API answers with (:mod:`indexer.metadata_limits`) is left out with its
  reason in ``Sources.refused``; the other rows are indexed.

A file whose name is not valid UTF-8 (``bad-\\xff.jpg``, written by an old camera or another system) cannot be kept
in the index (paths are text in SQL, in the watcher's stamps, in JSON answers): it is left out with its reason in
``Sources.refused``, shown with its odd bytes escaped, and the rest of the folder is indexed.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexer.images import is_image_path
from indexer.metadata_limits import metadata_problem
from indexer.regular_files import read_regular_text

MANIFEST_SUFFIXES = frozenset({".csv", ".jsonl", ".ndjson"})
_KNOWN = ("title", "caption", "tags")


UNSTORABLE_NAME = "its name is not valid UTF-8 (written by another system?): rename it to index it"


class SourceError(ValueError):
    """A path or manifest the user gave cannot be used; the message says which and why."""


@dataclass
class Sources:
    paths: list[Path] = field(default_factory=list)
    metadata: dict[Path, dict[str, Any]] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path as shown, why): left out, not indexed


def storable(path: Path | str) -> bool:
    """Whether ``path`` can be kept as text: Python decodes undecodable bytes of a file name to lone surrogates
    (``surrogateescape``), which no UTF-8 database, log or JSON answer can hold."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(path: Path | str) -> str:
    """``path`` for people: its undecodable bytes written as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def split_storable(paths: Iterable[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """``paths`` that can be indexed, and the others as ``(shown, why)``."""
    kept: list[Path] = []
    refused: list[tuple[str, str]] = []
    for path in paths:
        if storable(path):
            kept.append(path)
        else:
            refused.append((shown(path), UNSTORABLE_NAME))
    return kept, refused


def expand_sources(inputs: Iterable[Path]) -> Sources:
    """Image paths (absolute, de-duplicated, in the order given) and metadata from manifests."""
    result = Sources()
    seen: set[Path] = set()

    def take(path: Path, meta: dict[str, Any] | None = None) -> None:
        if not storable(path):
            result.refused.append((shown(path), UNSTORABLE_NAME))
            return
        if path in seen:
            if meta:
                result.metadata[path] = meta
            return
        seen.add(path)
        result.paths.append(path)
        if meta:
            result.metadata[path] = meta

    for raw in inputs:
        path = Path(raw).expanduser()
        if not path.exists():
            raise SourceError(f"{raw}: no such file or folder")
        path = path.resolve()
        if path.is_dir():
            for found in _walk(path):
                take(found)
        elif path.suffix.lower() in MANIFEST_SUFFIXES:
            for image, meta in read_manifest(path, result.refused):
                take(image, meta)
        elif is_image_path(path):
            take(path)
        else:
            raise SourceError(
                f"{raw}: not a folder, an image ({'/'.join(sorted(_image_suffixes()))}) "
                f"or a manifest ({'/'.join(sorted(MANIFEST_SUFFIXES))})"
            )
    return result


def _image_suffixes() -> set[str]:
    from indexer.images import IMAGE_SUFFIXES

    return set(IMAGE_SUFFIXES)


def _walk(folder: Path) -> list[Path]:
    found = []
    for path in folder.rglob("*"):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue  # .thumbnails, .git, editor temp files
        if path.is_file() and is_image_path(path):
            found.append(path.resolve())
    return sorted(found)


def read_manifest(manifest: Path, refused: list[tuple[str, str]] | None = None) -> list[tuple[Path, dict[str, Any]]]:
    """Rows of a CSV or JSONL manifest as (absolute image path, metadata). A row whose metadata is over its bounds
    goes to ``refused`` as ``(image, why)`` (with ``refused`` None: :class:`SourceError`)."""
    try:
        text = read_regular_text(manifest, encoding="utf-8-sig")  # a FIFO: refused at once
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read manifest {manifest}: {exc}") from exc
    rows = _csv_rows(manifest, text) if manifest.suffix.lower() == ".csv" else _jsonl_rows(manifest, text)
    out = []
    left_out = 0
    for where, row in rows:
        raw_path = row.get("path")
        if not isinstance(raw_path, str) or not raw_path.strip():
            raise SourceError(f"{manifest}:{where}: missing 'path'")
        image = Path(raw_path.strip()).expanduser()
        if not image.is_absolute():
            image = manifest.parent / image
        if not image.is_file():
            raise SourceError(f"{manifest}:{where}: image {raw_path!r} not found (looked at {image})")
        meta = _metadata(manifest, where, row)
        problem = metadata_problem(meta)
        if problem is not None:
            why = f"line {where} of {manifest.name} left out: {problem}"
            if refused is None:
                raise SourceError(f"{manifest}:{where}: {problem}")
            refused.append((shown(image.resolve()), why))
            left_out += 1
            continue
        out.append((image.resolve(), meta))
    if not out and not left_out:
        raise SourceError(f"manifest {manifest} lists no images")
    return out


def _csv_rows(manifest: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines())
    if not reader.fieldnames or "path" not in reader.fieldnames:
        raise SourceError(f"{manifest}: a CSV manifest needs a header row with a 'path' column")
    # DictReader line numbers: header is line 1, so the first row is line 2.
    return [(index + 2, dict(row)) for index, row in enumerate(reader)]


def _jsonl_rows(manifest: Path, text: str) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{manifest}:{number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(row, dict):
            raise SourceError(f"{manifest}:{number}: each line must be a JSON object with a 'path' key")
        rows.append((number, row))
    return rows


def _metadata(manifest: Path, where: int, row: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("title", "caption"):
        value = row.get(key)
        if value not in (None, ""):
            meta[key] = str(value)
    tags = row.get("tags")
    if isinstance(tags, str):
        parsed = [t.strip() for t in tags.replace(";", ",").replace("|", ",").split(",") if t.strip()]
        if parsed:  # an empty CSV cell means "no tags given", not "clear the tags"
            meta["tags"] = parsed
    elif isinstance(tags, list):
        meta["tags"] = [str(t).strip() for t in tags if str(t).strip()]
    elif tags is not None:
        raise SourceError(f"{manifest}:{where}: 'tags' must be a list or a comma-separated string")
    extra = {k: v for k, v in row.items() if k not in ("path", *_KNOWN) and v not in (None, "") and k is not None}
    if extra:
        meta["extra"] = extra
    return meta
