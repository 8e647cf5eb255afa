#!/usr/bin/env bash
# The test command: installs everything into .venv (the exact versions of requirements-dev.lock; Chromium and
# docker-compose for the browser and deployment tests), then runs lint, type checks (beside the tests) and the whole
# pytest suite, in one pytest worker process per CPU core (pytest-xdist; TEST_WORKERS sets another number, 0 runs in
# this process). Extra arguments go to pytest (e.g. -m "not slow").
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
# Debian's Chromium drives the end-to-end web page tests and docker-compose validates the deployment files (no
# Docker engine here). They are installed when absent; if that cannot be done this command stops with the reason
# (under CI the tests that need them fail, never skip). apt waits up to 10 minutes for a dpkg lock another install
# holds instead of giving up at once.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v docker-compose >/dev/null 2>&1 || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "error: ${missing[*]} not installed and apt-get (as root) is not available to install them;" \
      "install them (Debian: apt-get install -y ${missing[*]}) and run scripts/test.sh again" >&2
    exit 1
  fi
  apt=(apt-get -o DPkg::Lock::Timeout=600 -o APT::Acquire::Retries=3)
  if ! { "${apt[@]}" update -qq && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -qq "${missing[@]}" >/dev/null; }; then
    echo "error: could not install ${missing[*]} with apt-get (see its message above); the browser and" \
      "deployment tests need them" >&2
    exit 1
  fi
fi
.venv/bin/ruff check app indexer training tests benchmarks scripts
# nproc counts the cores this process may use, but says 1 under OMP_NUM_THREADS=1 (which the tests' threads use).
workers="${TEST_WORKERS:-$(unset OMP_NUM_THREADS OMP_THREAD_LIMIT; nproc 2>/dev/null || echo 1)}"
# mypy checks the types beside the tests: about a minute of one core, while the tests spend part of theirs waiting
# on servers and subprocesses. Its report follows the tests' output; either failing fails this command.
mkdir -p .mypy_cache
.venv/bin/mypy > .mypy_cache/report.txt 2>&1 &
mypy_pid=$!
status=0
.venv/bin/pytest -q -n "$workers" "$@" || status=$?
mypy_status=0
wait "$mypy_pid" || mypy_status=$?
cat .mypy_cache/report.txt
if [ "$mypy_status" -ne 0 ]; then
  echo "error: mypy found type errors (its report is above)" >&2
  status=1
fi
exit "$status"
