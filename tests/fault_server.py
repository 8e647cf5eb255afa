"""A service process on the fake models, for measurements that need their own process (peak RSS):
``python tests/fault_server.py PORT WORKDIR`` serves 8 random photos; POLYGLOT_* variables configure it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import uvicorn
from api_fixtures import CAPTIONS, fake_engine_factory
from conftest import write_random_images

from app.main import create_app
from app.service_settings import ServiceSettings


def main() -> None:
    port, work = int(sys.argv[1]), Path(sys.argv[2])
    settings = ServiceSettings(
        home=work / "home", index_dir=work / "index", cache_dir=work / "cache", image_encoder="fake-grid"
    )
    photos = write_random_images(work / "photos", 8, seed=3, size=(48, 36))
    app = create_app(settings, fake_engine_factory(photos, CAPTIONS))
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
