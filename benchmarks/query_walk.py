"""Which project modules one text ``GET /search`` runs through (issue 25: at most 12).

Starts the service in-process (``TestClient``: lifespan, micro-batcher and thread pool as served) on a small
index, warms it up, then records every Python function call of ONE ``GET /search?q=…&lang=…`` in every thread
(a profile hook installed before the app starts, recording only while that request runs) and prints the
distinct modules under ``app/``, ``indexer/`` and ``training/`` whose code ran, in the order they first ran::

    .venv/bin/python benchmarks/query_walk.py                       # the shipped student (needs `polyglot models build`)
    .venv/bin/python benchmarks/query_walk.py --models fixtures     # the test suite's fake encoders (no model files)
    .venv/bin/python benchmarks/query_walk.py --lang en,fr,cs,zh,none --json

``--lang none`` leaves ``lang`` out (the language is detected). ``--models auto`` (default) takes the shipped
student when its ONNX build is in the models folder (POLYGLOT_MODELS_DIR, default ``var/models``), else the
fixtures. ``tests/house/test_query_walk.py`` runs the walk on the fixtures and asserts the bound.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROJECT_PACKAGES = ("app", "indexer", "training")
QUERIES = {
    "en": "a dog runs on the beach",
    "fr": "un chien court sur la plage",
    "de": "ein Hund läuft am Strand",
    "cs": "pes běží po pláži",
    "zh": "一只狗在海滩上奔跑",
    "none": "un chien court sur la plage",
}
LIMIT = 12


def module_of(filename: str) -> str | None:
    """The project module a code object's file belongs to (``app/engine.py`` → ``app.engine``), else None."""
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[0] not in PROJECT_PACKAGES or relative.suffix != ".py":
        return None
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class Walk:
    """A profile hook for every thread (install before the threads start) that records, while ``recording``,
    the files of the Python functions called; modules in first-call order."""

    def __init__(self) -> None:
        self.recording = False
        self._files: dict[str, None] = {}  # insertion-ordered; dict writes are atomic under the GIL
        self._calls: list[str] = []

    def hook(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.recording and event == "call":
            filename = frame.f_code.co_filename
            self._files.setdefault(filename)
            self._calls.append(filename)

    @contextmanager
    def installed(self) -> Iterator[Walk]:
        threading.setprofile(self.hook)
        sys.setprofile(self.hook)
        try:
            yield self
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]

    def record(self, fn: Callable[[], Any]) -> Any:
        self._files.clear()
        self._calls.clear()
        self.recording = True
        try:
            return fn()
        finally:
            self.recording = False

    @property
    def modules(self) -> list[str]:
        names = (module_of(filename) for filename in self._files)
        return list(dict.fromkeys(name for name in names if name is not None))

    @property
    def hops(self) -> int:
        """Calls that cross from one project module into another (all threads interleaved; indicative)."""
        names = [module_of(filename) for filename in self._calls]
        project = [name for name in names if name is not None]
        return sum(1 for a, b in pairwise(project) if a != b)


def walk_search(client: Any, walk: Walk, q: str, lang: str | None, warm_up: int = 3) -> tuple[list[str], int]:
    """Warm the service up with ``q`` variants, then record one ``GET /search``; its modules and hops."""
    params = {"q": q, **({"lang": lang} if lang else {})}
    for n in range(warm_up):
        answer = client.get("/search", params={**params, "q": f"{q} {n}"})
        assert answer.status_code == 200, answer.text
    answer = walk.record(lambda: client.get("/search", params=params))
    assert answer.status_code == 200, answer.text
    return walk.modules, walk.hops


def _fixture_app(folder: Path) -> Any:
    """The test suite's service: fake text encoder and CNN, 8 random photos (tests/api_fixtures.py)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from api_fixtures import CAPTIONS, fake_engine_factory
    from conftest import FakeImageEncoder, write_random_images

    from app.main import create_app
    from app.service_settings import ServiceSettings

    settings = ServiceSettings(home=folder / "home", image_encoder=FakeImageEncoder.name, query_cache_size=0)
    photos = write_random_images(folder / "photos", 8, seed=3, size=(48, 36))
    return create_app(settings, fake_engine_factory(photos, CAPTIONS))


def _real_app(folder: Path, models_dir: Path) -> Any:
    """The served configuration (shipped student, bundled CNN) on an index of three plain-colour photos."""
    from PIL import Image

    from app.main import create_app
    from app.service_settings import ServiceSettings
    from indexer.image_index import ImageIndex

    settings = ServiceSettings(home=folder / "home", models_dir=models_dir, query_cache_size=0)
    paths = []
    for name, rgb in {"red": (220, 30, 30), "green": (30, 200, 40), "blue": (30, 60, 220)}.items():
        paths.append(folder / f"{name}.png")
        Image.new("RGB", (96, 96), rgb).save(paths[-1])
    with ImageIndex.open(settings) as index:
        index.add_paths(paths, progress=False)
    return create_app(settings)


def student_built(models_dir: Path) -> bool:
    from indexer.built_models import is_built
    from indexer.export.registry import E5_STUDENT_ONNX

    return E5_STUDENT_ONNX is not None and is_built(E5_STUDENT_ONNX, models_dir)


def run(models: str, langs: list[str], models_dir: Path) -> dict[str, Any]:
    from fastapi.testclient import TestClient

    if models == "auto":
        models = "real" if student_built(models_dir) else "fixtures"
    walks: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="query-walk-") as tmp, Walk().installed() as walk:
        app = _real_app(Path(tmp), models_dir) if models == "real" else _fixture_app(Path(tmp))
        with TestClient(app) as client:
            for lang in langs:
                q = QUERIES.get(lang, QUERIES["en"])
                modules, hops = walk_search(client, walk, q, None if lang == "none" else lang)
                walks[lang] = {"query": q, "count": len(modules), "hops": hops, "modules": modules}
    return {"models": models, "limit": LIMIT, "walks": walks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", choices=["auto", "real", "fixtures"], default="auto")
    parser.add_argument("--lang", default="fr", help="comma-separated; 'none' leaves lang out (detected)")
    parser.add_argument("--models-dir", type=Path, default=Path(os.environ.get("POLYGLOT_MODELS_DIR", "var/models")))
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    for key in [key for key in os.environ if key.startswith("POLYGLOT_")]:
        del os.environ[key]  # the walk of the default configuration, whatever the shell has set
    result = run(args.models, args.lang.split(","), args.models_dir.resolve())
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return
    print(f"models: {result['models']}")
    for lang, found in result["walks"].items():
        print(f"\nGET /search?q={found['query']}" + (f"&lang={lang}" if lang != "none" else "") + ":")
        for number, module in enumerate(found["modules"], start=1):
            print(f"  {number:2d}. {module}")
        print(f"  {found['count']} project modules (limit {LIMIT}), {found['hops']} calls across modules")


if __name__ == "__main__":
    main()
