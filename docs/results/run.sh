#!/usr/bin/env bash
# One tower experiment: train a tower and store its dev recalls.
# usage: docs/results/run.sh NAME [polyglot train options...]   (run from the repository root)
set -euo pipefail
name=$1
shift
data=${DATA:-../shared/data/m30k-f8k}
mkdir -p var/towers docs/results
start=$(date +%s)
.venv/bin/polyglot train --data "$data" --out "var/towers/$name" \
  --json "docs/results/$name.json" --c2c-json "docs/results/$name.c2c.json" "$@"
echo "$name: $(($(date +%s) - start)) s wall-clock (machine shared)" | tee -a docs/results/timings.txt
