"""The first tag on a fresh install: ``POST /tag`` in new languages right after ``/ready``, and a cold CLI tag.

    .venv/bin/python benchmarks/first_tag.py --out benchmarks/first_tag.json --md benchmarks/first_tag.md

A throw-away home folder (no index, no caption collection, an empty cache) shares only the models folder that
``polyglot models fetch`` filled (the exported graphs and the concept vectors, as the set-up leaves them).
``polyglot serve --no-index`` is started on a free loopback port; once ``/ready`` answers, one dev photo is tagged
in each language of ``--langs`` in turn, each language asked for the first time (wall-clock, client included).
Then ``polyglot tag PHOTO --lang fr,de,ja`` runs as a new process, timed from start to exit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT.parent / "shared" / "data" / "imagenet-samples" / "images" / "n02085620_Chihuahua.JPEG"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def serve_and_tag(env: dict[str, str], photo: Path, langs: list[str]) -> dict[str, Any]:
    port = free_port()
    polyglot = str(Path(sys.executable).with_name("polyglot"))
    started = time.perf_counter()
    server = subprocess.Popen(
        [polyglot, "serve", "--no-index", "--host", "127.0.0.1", "--port", str(port), "--quiet"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(timeout=60.0) as client:
            while True:
                if server.poll() is not None:
                    raise SystemExit(f"the server exited with {server.returncode} before /ready")
                if time.perf_counter() - started > 300:
                    raise SystemExit("no /ready within 300 s")
                try:
                    if client.get(f"{base}/ready").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.1)
            ready = time.perf_counter() - started
            data = photo.read_bytes()
            first: dict[str, float] = {}
            tags: dict[str, list[str]] = {}
            for lang in langs:
                t0 = time.perf_counter()
                answer = client.post(f"{base}/tag", params={"lang": lang, "k": 5}, files={"file": (photo.name, data)})
                first[lang] = time.perf_counter() - t0
                answer.raise_for_status()
                body = answer.json()
                tags[lang] = [t["tag"] for t in body[lang]]  # the answer: language → tags, best first
    finally:
        server.terminate()
        server.wait(timeout=30)
    return {"ready_s": round(ready, 2), "first_tag_s": {k: round(v, 3) for k, v in first.items()}, "tags": tags}


def cold_cli(env: dict[str, str], photo: Path) -> float:
    polyglot = str(Path(sys.executable).with_name("polyglot"))
    t0 = time.perf_counter()
    subprocess.run(
        [polyglot, "tag", str(photo), "--lang", "fr,de,ja", "--json"], env=env, check=True, capture_output=True
    )
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photo", type=Path, default=PHOTO)
    parser.add_argument("--langs", default="fr,ja,ar,de,tr")
    parser.add_argument("--models-dir", type=Path, default=ROOT / "var" / "models")
    parser.add_argument("--cache-dir", type=Path, default=None, help="a cache to share (default: a new, empty one)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "first_tag.json")
    parser.add_argument("--md", type=Path, default=ROOT / "benchmarks" / "first_tag.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("POLYGLOT_")}
        env.update(POLYGLOT_HOME=home, POLYGLOT_MODELS_DIR=str(args.models_dir.resolve()))
        if args.cache_dir is not None:
            env["POLYGLOT_CACHE_DIR"] = str(args.cache_dir.resolve())
        served = serve_and_tag(env, args.photo, args.langs.split(","))
        cli_seconds = cold_cli(env, args.photo)
    result = {
        "machine": f"{os.cpu_count()} CPUs ({platform.platform()})",
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "photo": args.photo.name,
        **served,
        "cold_cli_tag_s": round(cli_seconds, 2),
    }
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    rows = "\n".join(
        f"| {lang} | {seconds:.3f} | {', '.join(served['tags'].get(lang, []))} |"
        for lang, seconds in served["first_tag_s"].items()
    )
    args.md.write_text(
        "# The first tag on a fresh install\n\n"
        f"Command: `.venv/bin/python benchmarks/first_tag.py`. Machine: {result['machine']}; load average "
        f"{result['load_average'][0]} at the start, {result['load_average'][1]} at the end.\n\n"
        f"`polyglot serve --no-index` on an empty home: `/ready` after {served['ready_s']} s. Then one `POST /tag` "
        f"of `{args.photo.name}` per language, each language asked for the first time:\n\n"
        "| lang | first /tag, s | top-5 tags |\n| --- | ---: | --- |\n"
        f"{rows}\n\n"
        f"A cold `polyglot tag {args.photo.name} --lang fr,de,ja --json` (a new process): {cli_seconds:.2f} s.\n",
        encoding="utf-8",
    )
    print(args.md.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
