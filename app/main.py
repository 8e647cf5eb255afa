"""The FastAPI application: ``create_app(settings)``; run with ``polyglot serve`` (or ``uvicorn --factory``).

Every router is served under ``/v1`` (documented in OpenAPI) and at the root (the short form, same handlers,
hidden from the schema). Models and indexes load once in the lifespan, in a worker thread.

Adding a component (e.g. the tagger) takes two lines here:

1. append its router to ``ROUTERS`` (``from app.routers import tag`` … ``tag.router``);
2. append a start-up hook to ``STARTUP_HOOKS``: a *blocking* function ``hook(engine) -> None`` that loads the
   component and stores it in ``engine.components["tagger"]`` (it runs in a worker thread after the engine
   is loaded; anything with a ``close()`` is closed at shutdown).

The router then reads it with a dependency, e.g.
``TaggerDep = Annotated[Tagger, Depends(lambda engine: engine.components["tagger"])]`` taking ``EngineDep``,
and runs its inference through ``await engine.run(fn, ...)`` (the bounded thread pool).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio.to_thread
from fastapi import APIRouter, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from app import errors
from app.engine import Engine, load_engine
from app.middleware import (
    BodyLimitMiddleware,
    BodyTimeoutMiddleware,
    HeadAsGetMiddleware,
    RequestMetricsMiddleware,
    SecurityHeadersMiddleware,
)
from app.prometheus_metrics import Metrics
from app.routers import captions, duplicates, health, images, library, search, tag
from app.schemas.errors import apply_limits, document_errors
from app.schemas.search import SCORE_DOC
from app.service_settings import ServiceSettings
from app.stacking import load_stacks_component
from app.watching import FolderWatcher, start_watcher

log = logging.getLogger("app")

STATIC_DIR = Path(__file__).parent / "static"
ROUTERS: list[APIRouter] = [
    search.router,
    library.router,
    captions.router,
    images.router,
    duplicates.router,
    tag.router,
    health.router,
]
STARTUP_HOOKS: list[Callable[[Engine], None]] = [tag.load_tagger_component, load_stacks_component]
EngineFactory = Callable[[ServiceSettings], Engine]
FAVICON_CACHE = {"Cache-Control": "public, max-age=604800"}

DESCRIPTION = (
    "Search photos in any language the text encoder covers, find similar images, and caption images from a "
    "caption collection. All endpoints live under `/v1`; the same paths without the prefix are kept as short "
    "forms.\n\n" + SCORE_DOC + "\n\nAdmin endpoints need the `X-API-Key` header (POLYGLOT_API_KEY)."
)


def create_app(settings: ServiceSettings | None = None, engine_factory: EngineFactory | None = None) -> FastAPI:
    """The service. ``settings`` default to the environment (read here, not at import);
    ``engine_factory`` replaces :func:`app.engine.load_engine` (tests pass small fakes)."""
    settings = settings or ServiceSettings()
    factory = engine_factory or load_engine
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = await anyio.to_thread.run_sync(factory, settings)
        watcher: FolderWatcher | None = None
        try:
            for hook in STARTUP_HOOKS:
                await anyio.to_thread.run_sync(hook, engine)
            for component, seconds in engine.load_seconds.items():
                metrics.load_seconds.labels(component).set(seconds)
            await engine.start()
            watcher = start_watcher(engine) if settings.index.watch_dirs else None  # serve --watch (issue 27)
            # Models, indexes and vocabularies are millions of long-lived objects: move them out of the garbage
            # collector's generations, or every full collection walks them all (~0.2 s pauses under load).
            gc.collect()
            gc.freeze()
            app.state.engine = engine
            yield
        finally:
            app.state.engine = None
            if watcher is not None:
                await anyio.to_thread.run_sync(watcher.stop)
            await engine.stop()
            await anyio.to_thread.run_sync(engine.close)

    app = FastAPI(
        title="Polyglot Image Search",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.engine = None
    errors.install(app, settings.service.error_log_interval_seconds)
    app.add_middleware(HeadAsGetMiddleware)  # innermost: HEAD wherever there is a GET
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.upload_limit)
    app.add_middleware(
        BodyTimeoutMiddleware,
        seconds=settings.service.body_timeout_seconds,
        total_seconds=settings.service.body_total_seconds,
    )
    app.add_middleware(SecurityHeadersMiddleware)
    # Added last = outermost: requests refused by the body limit are counted and logged too.
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics, log_requests=settings.service.log_requests)
    if settings.service.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.service.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["*"],
        )
    for router in ROUTERS:
        app.include_router(router, prefix="/v1")
        app.include_router(router, include_in_schema=False)  # short form: /search == /v1/search

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    generate = app.openapi

    def openapi() -> dict:
        # The generated schema plus every error status each operation answers, with the bodies as they are, and
        # the limits that are settings (and the loaded encoder's languages) instead of the code's ceilings.
        if app.openapi_schema is None:
            engine = app.state.engine
            limits = {
                "k": settings.service.max_k,
                "offset": settings.service.max_offset,
                "q": settings.service.max_query_chars,
            }
            languages = list(engine.pipeline.languages or []) if engine is not None else None
            schema = apply_limits(document_errors(generate()), limits, languages)
            if engine is None:
                return schema  # not cached: the languages are known once the models are loaded
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        # Every browser asks for it at the root, whatever the page links: a 404 per visit otherwise.
        return FileResponse(STATIC_DIR / "favicon.ico", media_type="image/x-icon", headers=FAVICON_CACHE)

    return app
