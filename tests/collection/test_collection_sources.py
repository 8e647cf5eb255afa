"""Expanding command-line inputs: folders, files, CSV/JSONL manifests, and their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import write_random_images

from indexer.image_sources import SourceError, expand_sources


def test_folder_is_recursive_sorted_and_skips_hidden_and_non_images(tmp_path: Path) -> None:
    write_random_images(tmp_path / "a" / "deep", 2)
    write_random_images(tmp_path / "a" / ".thumbnails", 1)
    (tmp_path / "a" / "notes.txt").write_text("x")
    (tmp_path / "a" / "UPPER.JPG").write_bytes((tmp_path / "a" / "deep" / "img_0_000.jpg").read_bytes())
    found = expand_sources([tmp_path / "a"])
    names = [p.relative_to(tmp_path).as_posix() for p in found.paths]
    assert names == ["a/UPPER.JPG", "a/deep/img_0_000.jpg", "a/deep/img_0_001.png"]
    assert all(p.is_absolute() for p in found.paths) and found.metadata == {}


def test_inputs_are_deduplicated_in_order(tmp_path: Path) -> None:
    a, b = write_random_images(tmp_path / "in", 2)
    found = expand_sources([b, tmp_path / "in", a])
    assert found.paths == [b.resolve(), a.resolve()]


def test_manifests_resolve_relative_paths_and_collect_metadata(tmp_path: Path) -> None:
    a, b = write_random_images(tmp_path / "imgs", 2)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "list.csv").write_text(f"path,tags,caption,source\n../imgs/{a.name},cat|pet,,flickr\n{b},,,\n")
    found = expand_sources([tmp_path / "m" / "list.csv"])
    assert found.paths == [a.resolve(), b.resolve()]
    assert found.metadata == {a.resolve(): {"tags": ["cat", "pet"], "extra": {"source": "flickr"}}}
    lines = [{"path": str(a), "title": "T", "tags": ["x", " "], "year": 2001}, {"path": f"imgs/{b.name}"}]
    (tmp_path / "list.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    found = expand_sources([tmp_path / "list.jsonl"])
    assert found.metadata[a.resolve()] == {"title": "T", "tags": ["x"], "extra": {"year": 2001}}
    assert found.paths == [a.resolve(), b.resolve()]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.csv", "path,title\n", "lists no images"),
        ("nopath.jsonl", '{"file": "a.jpg"}\n', "nopath.jsonl:1: missing 'path'"),
        ("array.jsonl", '["a.jpg"]\n', "must be a JSON object"),
        ("badtags.jsonl", '{"path": "img_0_000.jpg", "tags": 3}\n', "'tags' must be a list"),
    ],
)
def test_bad_manifests(tmp_path: Path, name: str, content: str, message: str) -> None:
    write_random_images(tmp_path, 1)
    (tmp_path / name).write_text(content)
    with pytest.raises(SourceError, match=message):
        expand_sources([tmp_path / name])
