"""Issue 27: exact and near-duplicate groups through the library, `GET /duplicates` and `polyglot index duplicates`."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import CAPTIONS, fake_engine_factory, service_settings  # noqa: F401
from fastapi.testclient import TestClient
from photo_samples import jpeg, write
from PIL import Image

from app.main import create_app
from app.service_settings import ServiceSettings


@pytest.fixture
def library(tmp_path: Path) -> list[Path]:
    """Two distinct photos; a byte-for-byte copy of the first; a re-encoded, halved copy of the second."""
    folder = tmp_path / "library"
    a = write(folder, "a.jpg", jpeg((96, 72), seed=1))
    b = write(folder, "b.jpg", jpeg((96, 72), seed=2))
    copy = folder / "copy_of_a.jpg"
    shutil.copy(a, copy)
    buffer = io.BytesIO()
    Image.open(b).resize((48, 36)).save(buffer, "JPEG", quality=60)
    small = write(folder, "b_small.jpg", buffer.getvalue())
    rng = np.random.default_rng(7)  # a photo unlike the others (noise)
    noise = Image.fromarray(rng.integers(0, 256, (72, 96, 3), dtype=np.uint8))
    buffer = io.BytesIO()
    noise.save(buffer, "PNG")
    other = write(folder, "noise.png", buffer.getvalue())
    return [a, b, copy, small, other]


@pytest.fixture
def client(service_settings: ServiceSettings, library: list[Path]) -> Iterator[TestClient]:  # noqa: F811
    with TestClient(create_app(service_settings, fake_engine_factory(library, CAPTIONS))) as test_client:
        yield test_client


def test_get_duplicates_groups_exact_and_near_copies(client: TestClient) -> None:
    answer = client.get("/v1/duplicates", params={"threshold": 0.98})
    assert answer.status_code == 200, answer.text
    groups = answer.json()["groups"]
    kinds = {g["kind"]: sorted(i["filename"] for i in g["images"]) for g in groups}
    assert kinds == {"exact": ["a.jpg", "copy_of_a.jpg"], "near": ["b.jpg", "b_small.jpg"]}
    near = next(g for g in groups if g["kind"] == "near")
    assert all(0.98 <= i["score"] <= 1.0 for i in near["images"])
    assert all(i["thumbnail_url"].endswith("/thumbnail") for g in groups for i in g["images"])
    assert client.get("/v1/duplicates", params={"threshold": 0.98, "limit": 1}).json()["total_groups"] == 2
    strict = client.get("/v1/duplicates", params={"threshold": 1.0}).json()["groups"]
    assert [g["kind"] for g in strict] == ["exact"]
    assert client.get("/v1/duplicates", params={"threshold": 2}).status_code == 422


def test_polyglot_index_duplicates(tmp_path: Path, library: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from test_search_cli import cli_env, invoke

    cli_env.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    assert invoke("index", "add", str(library[0].parent), "-q")[0] == 0
    code, output = invoke("index", "duplicates", "--threshold", "0.98", "--json")
    assert code == 0, output
    groups = json.loads(output)["groups"]
    assert [g["kind"] for g in groups] == ["exact", "near"]
    assert {Path(i["path"]).name for i in groups[1]["images"]} == {"b.jpg", "b_small.jpg"}
    code, output = invoke("index", "duplicates", "--threshold", "0.98")
    assert code == 0 and "exact" in output and "same bytes" in output


def test_polyglot_index_duplicates_marks_the_copy_to_keep(
    tmp_path: Path, library: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: --keep marks a copy (persisted: the next run lists it first, marked), --unmark takes it off."""
    from test_search_cli import cli_env, invoke

    cli_env.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    assert invoke("index", "add", str(library[0].parent), "-q")[0] == 0
    groups = json.loads(invoke("index", "duplicates", "--threshold", "0.98", "--json")[1])["groups"]
    small = next(i for i in groups[1]["images"] if Path(i["path"]).name == "b_small.jpg")
    assert not any(i["kept"] for g in groups for i in g["images"])
    code, output = invoke("index", "duplicates", "--threshold", "0.98", "--keep", str(small["id"]))
    assert code == 0 and f"photo {small['id']} marked as the copy to keep" in output
    assert f"{small['id']:>8}" in output and "keep" in output
    groups = json.loads(invoke("index", "duplicates", "--threshold", "0.98", "--json")[1])["groups"]
    assert groups[1]["images"][0] == {**small, "kept": True}  # listed first, marked
    assert sum(i["kept"] for g in groups for i in g["images"]) == 1
    code, output = invoke("index", "duplicates", "--unmark", str(small["id"]))
    assert code == 0 and "keep mark taken off" in output
    groups = json.loads(invoke("index", "duplicates", "--json")[1])["groups"]
    assert not any(i["kept"] for g in groups for i in g["images"])
    code, output = invoke("index", "duplicates", "--keep", "999999")
    assert code == 2 and "no photo with id 999999" in output


def test_polyglot_index_timeline(tmp_path: Path, library: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 36: the library by date from the shell, page by page with the printed cursor; undated photos (none of
    these has EXIF) by their file's time, said so."""
    import os

    from test_search_cli import cli_env, invoke

    cli_env.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    for number, path in enumerate(sorted(library)):
        os.utime(path, (1_600_000_000 + number * 3600, 1_600_000_000 + number * 3600))
    assert invoke("index", "add", str(library[0].parent), "-q")[0] == 0
    code, output = invoke("index", "timeline", "--k", "3", "--json")
    assert code == 0, output
    first = json.loads(output)
    assert [Path(p["path"]).name for p in first["photos"]] == [p.name for p in sorted(library)[::-1][:3]]
    assert {p["date_source"] for p in first["photos"]} == {"file"} and first["next_cursor"]
    code, output = invoke("index", "timeline", "--k", "3", "--cursor", first["next_cursor"], "--json")
    rest = json.loads(output)
    assert [Path(p["path"]).name for p in rest["photos"]] == [p.name for p in sorted(library)[::-1][3:]]
    assert rest["next_cursor"] is None
    code, output = invoke("index", "timeline", "--k", "2")
    assert code == 0 and "more: polyglot index timeline --cursor" in output and "file" in output
    assert invoke("index", "timeline", "--cursor", "nonsense")[0] == 2
    assert invoke("index", "timeline", "--month", "2024-13")[0] == 2
