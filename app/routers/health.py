"""``/health`` (the process answers), ``/ready`` (models and index loaded), ``/metrics`` (Prometheus)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.schemas.health import Health, Ready

router = APIRouter(tags=["health"])


@router.get("/health", response_model=Health, summary="Liveness: the process answers")
async def health(request: Request) -> Health:
    engine = getattr(request.app.state, "engine", None)  # None while loading: still alive
    return Health(status="ok", text_encoder=engine.pipeline.encoder_name if engine is not None else None)


@router.get(
    "/ready",
    response_model=Ready,
    summary="Readiness: models and index loaded",
    responses={503: {"description": "Still loading."}},
)
async def ready(request: Request) -> Response:
    engine = getattr(request.app.state, "engine", None)
    if engine is None:
        return JSONResponse({"status": "loading"}, status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
    images, captions, kind = await engine.run(
        lambda: (len(engine.images), len(engine.captions), engine.images.index_kind)
    )
    models = engine.models
    body = Ready(
        status="ready",
        images=images,
        captions=captions,
        text_encoder=engine.pipeline.encoder_name,
        text_model=models.label,
        text_languages=engine.pipeline.languages,
        image_encoder=engine.images.encoder.name,
        index_kind=kind,
        load_seconds={k: round(v, 4) for k, v in engine.load_seconds.items()},
    )
    return JSONResponse(body.model_dump())


@router.get("/metrics", summary="Prometheus metrics", response_class=Response)
async def metrics(request: Request) -> Response:
    collected = request.app.state.metrics
    engine = getattr(request.app.state, "engine", None)
    if engine is not None:
        images, captions = await engine.run(lambda: (len(engine.images), len(engine.captions)))
        collected.images.set(images)
        collected.captions.set(captions)
        batcher = engine.text_batcher
        collected.search_batches.set(batcher.batches if batcher is not None else 0)
        collected.search_batched_queries.set(batcher.items if batcher is not None else 0)
    return Response(generate_latest(collected.registry), media_type=CONTENT_TYPE_LATEST)
