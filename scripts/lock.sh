#!/usr/bin/env bash
# Refresh requirements.lock (runtime) and requirements-dev.lock (runtime + dev, laser, cluster extras): the exact
# versions scripts/bootstrap.sh installs, so every clone gets the versions the tests passed with.
#   scripts/lock.sh                     resolve pyproject.toml afresh in a throw-away virtual environment
#   scripts/lock.sh --from-venv .venv   lock what an existing environment holds (it must have the dev extras)
#   --out DIR                           write the two files to DIR instead of the project root
# Then run scripts/test.sh (it installs from the new locks) and commit both files with the change that needed them.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
venv=""
out="$PWD"
while [ $# -gt 0 ]; do
  case "$1" in
    --from-venv) venv="${2:?--from-venv needs a folder}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    *) echo "error: unknown argument $1 (see the top of scripts/lock.sh)" >&2; exit 2 ;;
  esac
done
if [ -z "$venv" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  venv="$tmp/venv"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  # torch first, pinned to the local CPU build: nothing later may pull a multi-GB CUDA build through a range.
  "$venv/bin/python" -m pip install --quiet "torch==2.13.0"
  "$venv/bin/python" -m pip install --quiet ".[dev,laser,cluster]"
fi
[ -x "$venv/bin/python" ] || { echo "error: $venv/bin/python not found" >&2; exit 2; }
"$venv/bin/python" scripts/lock_closure.py --project "$PWD" --out "$out"
echo "wrote $out/requirements.lock and $out/requirements-dev.lock from $venv"
