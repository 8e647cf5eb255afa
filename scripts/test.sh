#!/usr/bin/env bash
# The test command: installs everything into .venv (dev extras, Chromium for the browser test), then runs
# lint, type checks and the whole pytest suite. Extra arguments go to pytest (e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
# Debian's Chromium drives the end-to-end web page test and docker-compose validates the deployment files
# (no Docker engine here); without them those tests are skipped, not failed.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
    || echo "warning: could not install ${missing[*]}; the tests that need them will be skipped" >&2
fi
.venv/bin/ruff check app indexer training tests benchmarks
.venv/bin/mypy
exec .venv/bin/pytest -q "$@"
