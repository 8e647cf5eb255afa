"""Schemathesis fuzzing against the OpenAPI schema (in-process ASGI, no server): no input ever gives a 5xx.

Admin calls carry the API key, so uploads and deletes are fuzzed too. Bounded: a few examples per operation
(``FUZZ_EXAMPLES``), well under a minute.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from api_fixtures import API_KEY, CAPTIONS, fake_engine_factory
from conftest import write_random_images
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from app.main import create_app
from app.service_settings import ServiceSettings

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FastAPI]:
    root: Path = tmp_path_factory.mktemp("fuzz")
    settings = ServiceSettings(
        home=root / "home",
        index_dir=root / "index",
        cache_dir=root / "cache",
        models_dir=root / "models",
        image_encoder="fake-grid",
        api_key=SecretStr(API_KEY),
        max_upload_bytes=100_000,
        thread_pool_size=2,
        database_url=None,
        tower_path=None,
    )
    photos = write_random_images(root / "photos", 6, seed=11)
    app = create_app(settings, fake_engine_factory(photos, CAPTIONS))
    with TestClient(app):  # runs the lifespan: the engine stays loaded for the whole module
        yield app


def test_no_input_gives_a_server_error(fuzz_app: FastAPI) -> None:
    # Operations are driven with hypothesis directly: schemathesis' pytest plugin does not support this pytest.
    schema = schemathesis.openapi.from_asgi("/openapi.json", fuzz_app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    for operation in operations:
        # Valid inputs (within the schema) and invalid ones (type errors, out-of-range values, missing fields).
        strategy = st.one_of(
            operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
        )

        @given(case=strategy)
        @settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def fuzz(case: schemathesis.Case) -> None:
            case.call_and_validate(headers={"X-API-Key": API_KEY}, checks=[not_a_server_error])

        fuzz()
