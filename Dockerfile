# syntax=docker/dockerfile:1
# Polyglot Image Search: multi-stage build, slim runtime, non-root user, tini as PID 1.
#   CPU (default):  docker build -t polyglot-image-search .
#   CUDA:           docker build --build-arg TORCH_VARIANT=cu124 -t polyglot-image-search:cuda .
# Models live in a volume (/models, filled by `polyglot models fetch`), the index and caches in /data.

ARG PYTHON_VERSION=3.11

FROM python:${PYTHON_VERSION}-slim AS builder
ARG TORCH_VARIANT=cpu
ARG TORCH_VERSION=2.13.0
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH
# torch first, from the index of the chosen variant: a plain `pip install torch` pulls the CUDA build.
RUN pip install --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" "torch==${TORCH_VERSION}"
WORKDIR /src
COPY pyproject.toml README.md ./
# The product: the service, the CLI and the inference library. The lab (training/: research encoders, towers and
# their weights, the training and evaluation commands) is not in the image.
COPY app ./app
COPY indexer ./indexer
# EXTRAS=cluster adds Ray and the Milvus client (docker compose --profile cluster builds that image).
ARG EXTRAS=""
RUN pip install ".${EXTRAS:+[$EXTRAS]}"

FROM python:${PYTHON_VERSION}-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini libgomp1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 polyglot \
    && mkdir -p /data /models /images \
    && chown polyglot:polyglot /data /models /images
COPY --from=builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    POLYGLOT_HOME=/data \
    POLYGLOT_INDEX_DIR=/data/index \
    POLYGLOT_CACHE_DIR=/data/cache \
    POLYGLOT_MODELS_DIR=/models
USER polyglot
WORKDIR /home/polyglot
VOLUME ["/data", "/models"]
EXPOSE 8000
# The health check is readiness: /ready answers 200 once the models and the index are loaded (503 before, and while
# shutting down), so an orchestrator waiting for "healthy" (compose depends_on, Swarm routing) sends no search to a
# service that cannot answer it. /health answers whenever the process does: the liveness probe (e.g. Kubernetes
# livenessProbe /health, readinessProbe /ready). No curl in the image: the check is a line of Python.
HEALTHCHECK --interval=30s --timeout=5s --start-period=180s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["polyglot", "serve", "--no-index", "--host", "0.0.0.0", "--port", "8000"]
