"""``/health`` (the process answers), ``/ready`` (models and index loaded, backends answering), ``/metrics``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.errors import backend_detail
from app.schemas.health import Health, NotReady, Ready
from indexer.store.failures import BackendUnavailableError

router = APIRouter(tags=["health"])
READ_ONLY = "the index's last save failed for lack of space: it serves its last saved state; the next write retries"


@router.get("/health", response_model=Health, summary="Liveness: the process answers")
async def health(request: Request) -> Health:
    engine = getattr(request.app.state, "engine", None)  # None while loading: still alive
    return Health(status="ok", text_encoder=engine.pipeline.encoder_name if engine is not None else None)


@router.get(
    "/ready",
    response_model=Ready,
    summary="Readiness: models and index loaded, database and vector server answering",
    responses={503: {"model": NotReady, "description": "Still loading, or a required backend is unreachable."}},
)
async def ready(request: Request) -> Response:
    engine = getattr(request.app.state, "engine", None)
    retry = {"Retry-After": str(request.app.state.settings.service.outage_retry_after_seconds)}
    if engine is None:
        return JSONResponse({"status": "loading"}, status_code=status.HTTP_503_SERVICE_UNAVAILABLE, headers=retry)
    try:
        # The metadata database (and Milvus, for that backend) answer now: an orchestrator stops sending traffic
        # to a replica that could only answer 503s.
        await engine.run_database(engine.images.check_backends)
    except BackendUnavailableError as exc:
        request.app.state.error_log.error(f"{exc.backend}-unavailable", str(exc), path=request.url.path)
        down = NotReady(status="unavailable", backend=exc.backend, detail=backend_detail(exc.backend))
        return JSONResponse(down.model_dump(exclude_none=True), status_code=503, headers=retry)
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
        image_precision=getattr(engine.images.encoder, "precision", "fp32"),
        index_kind=kind,
        load_seconds={k: round(v, 4) for k, v in engine.load_seconds.items()},
        # Why, with the folder, is in the log: the answer says only that it is so.
        read_only=READ_ONLY if engine.images.read_only_reason else None,
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
