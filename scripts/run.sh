#!/usr/bin/env bash
# The main job: from a fresh clone to a running search service on http://127.0.0.1:8000.
# Installs into .venv, fetches the bundled models, indexes the sample collection, serves search + web page.
# Extra arguments go to `polyglot serve` (e.g. --images DIR --host 0.0.0.0 --port 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec .venv/bin/polyglot serve "$@"
