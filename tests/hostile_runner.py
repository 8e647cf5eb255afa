"""Send every file of a hostile corpus through every image path, in a process of its own, and write what happened.

Paths: ``POST /search/image``, ``POST /captions``, ``POST /tag``, admin ``POST /images`` (then the thumbnail of
whatever it accepted) through the real app (fake text side, the fake grid image encoder behind the real
EfficientNet-Lite2 preprocessing, so resizing is the production code), then ``polyglot index add`` on the
corpus folder. For each call: the status, the seconds and the process's peak RSS (``ru_maxrss``) after it.

A process of its own makes ``ru_maxrss`` a clean measure: its growth over the warmed-up baseline is the most
memory any hostile image made the process touch. An address-space limit (baseline + ``--headroom-mb``) turns a
runaway allocation into a ``MemoryError`` instead of the machine's OOM killer (the bug this catches asked for
27 GB). Used by tests/faults/test_hostile_images.py; by hand (prints the table)::

    .venv/bin/python tests/hostile_runner.py CORPUS_DIR WORK_DIR --make-corpus [--headroom-mb 2048]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS.parent), str(TESTS)]  # this checkout's code first, then the test helpers

import numpy as np  # noqa: E402
import torch  # noqa: E402
from api_fixtures import API_KEY, CAPTIONS, fake_engine_factory, fake_text_embedder  # noqa: E402
from conftest import FakeImageEncoder  # noqa: E402
from PIL import Image  # noqa: E402

from indexer.encoders.efficientnet import EfficientNetLiteEncoder  # noqa: E402

ENDPOINTS = ("/v1/search/image", "/v1/captions", "/v1/tag?lang=fr", "/v1/images")
FR_WORDS = ["chien", "plage", "rouge", "voiture", "enfants", "rue", "vert", "bleu"]


class PreprocessingFakeEncoder(FakeImageEncoder):
    """The fake 48-d grid encoder fed by the real EfficientNet-Lite2 preprocessing (bicubic resize + centre crop
    to 260 px): what a hostile image costs before the CNN; the CNN itself always sees 3×260×260."""

    def __init__(self) -> None:
        super().__init__(delay=0)
        self.real = EfficientNetLiteEncoder("efficientnet-lite2")  # preprocess() needs no weights

    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        self.calls += 1
        batch = torch.stack([self.real.preprocess(image) for image in images])
        grid = torch.nn.functional.adaptive_avg_pool2d(batch, 4).permute(0, 2, 3, 1).reshape(len(images), -1)
        return (grid.numpy() + 1.0) / 2.0 + 0.01


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def limit_address_space(headroom_mb: int) -> None:
    with open("/proc/self/status") as status:
        vm_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    limit = (vm_kb * 1024) + headroom_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def service_settings(work: Path) -> Any:
    from pydantic import SecretStr

    from app.service_settings import ServiceSettings

    return ServiceSettings(
        home=work / "home",
        index_dir=work / "index",
        cache_dir=work / "cache",
        models_dir=work / "models",
        image_encoder=FakeImageEncoder.name,
        batch_size=8,
        api_key=SecretStr(API_KEY),
        max_upload_bytes=1_000_000,
        thread_pool_size=2,
    )


def post(client: Any, endpoint: str, name: str, data: bytes) -> Any:
    headers = {"X-API-Key": API_KEY} if endpoint == "/v1/images" else {}
    return client.post(endpoint, files={"file": (name, data, "application/octet-stream")}, headers=headers)


def run_service(corpus: list[Path], work: Path, headroom_mb: int) -> tuple[float, list[dict[str, Any]]]:
    from fastapi.testclient import TestClient

    from app.main import create_app
    from indexer.tagging.store import VocabularyStore
    from indexer.tagging.vocabulary import build_vocabulary

    settings = service_settings(work)
    store = VocabularyStore.beside_index(settings.resolved_index_dir)
    store.save(build_vocabulary("fr", Counter(dict.fromkeys(FR_WORDS, 3)), fake_text_embedder().embed))
    app = create_app(settings, fake_engine_factory((), CAPTIONS, image_encoder=PreprocessingFakeEncoder))
    rows: list[dict[str, Any]] = []
    with TestClient(app, raise_server_exceptions=False) as client:
        warm = io.BytesIO()
        Image.new("RGB", (300, 200), (20, 120, 200)).save(warm, format="PNG")
        for endpoint in ENDPOINTS:  # warm every path (thread pool, encoders, SQL) before the baseline
            assert post(client, endpoint, "warm.png", warm.getvalue()).status_code < 300
        limit_address_space(headroom_mb)
        baseline = peak_rss_mb()
        for path in corpus:
            data = path.read_bytes()
            for endpoint in ENDPOINTS:
                response, seconds = timed(post, client, endpoint, path.name, data)
                rows.append(_row(path.name, endpoint, response.status_code, seconds, response.text[:500]))
                if endpoint == "/v1/images" and response.status_code in (200, 201):
                    url = response.json()["thumbnail_url"]
                    thumb, seconds = timed(client.get, url)
                    rows.append(_row(path.name, "thumbnail", thumb.status_code, seconds, ""))
    return baseline, rows


def run_cli(folder: Path, work: Path) -> dict[str, Any]:
    """``polyglot index add FOLDER`` in this process (its encoder swapped for the preprocessing fake)."""
    from typer.testing import CliRunner

    import indexer.image_index as image_index
    from app.cli import cli

    image_index.build_image_encoder = lambda settings: PreprocessingFakeEncoder()
    env = {
        "POLYGLOT_HOME": str(work / "cli"),
        "POLYGLOT_TOWER_PATH": str(work / "no-tower"),  # plain l2 image space
        "POLYGLOT_IMAGE_ENCODER": FakeImageEncoder.name,
    }
    result, seconds = timed(CliRunner().invoke, cli, ["index", "add", str(folder), "--quiet"], None, env)
    return _row(folder.name, "polyglot index add", result.exit_code, seconds, result.output[-4000:])


def _row(image: str, path: str, status: int, seconds: float, text: str) -> dict[str, Any]:
    return {
        "image": image,
        "path": path,
        "status": status,
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "text": text,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("work", type=Path)
    parser.add_argument("--headroom-mb", type=int, default=2048, help="address space allowed over the baseline")
    parser.add_argument("--json", type=Path, help="write the results here (default: print a table)")
    parser.add_argument("--make-corpus", action="store_true", help="write tests/hostile_images.py's corpus first")
    args = parser.parse_args(argv)
    if args.make_corpus:
        from hostile_images import corpus

        corpus(args.corpus)  # streamed: a few MB, well under the baseline measured later
    for key in [k for k in os.environ if k.startswith("POLYGLOT_")]:
        del os.environ[key]
    args.work.mkdir(parents=True, exist_ok=True)
    os.chdir(args.work)  # pydantic-settings reads ./.env: the work folder has none
    corpus = sorted(p for p in args.corpus.iterdir() if p.is_file())
    baseline, rows = run_service(corpus, args.work, args.headroom_mb)
    rows.append(run_cli(args.corpus, args.work))
    report = {"baseline_peak_rss_mb": round(baseline, 1), "rows": rows}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
        return
    print(f"baseline peak RSS {baseline:.0f} MB; per call: status, seconds, peak RSS growth so far (MB)")
    for row in rows:
        growth = row["peak_rss_mb"] - baseline
        print(f"{row['image']:32s} {row['path']:20s} {row['status']:4d} {row['seconds']:7.3f} s {growth:7.1f}")


if __name__ == "__main__":
    main()
