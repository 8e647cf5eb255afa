#!/usr/bin/env bash
# Issue 15 (SMALR): train LA, HEM and SMALR towers on m30k-f8k train (en, de, fr, cs), then evaluate each on dev
# as /search serves it (the SMALR tower alone: POLYGLOT_FAST_TOWER=off). Run from the repository root.
# EPOCHS/PATIENCE/SUFFIX: the longer-budget rows (EPOCHS=40 PATIENCE=4 SUFFIX=-long).
set -euo pipefail
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
DATA=${DATA:-../shared/data/m30k-f8k}
COMMON=(--data "$DATA" --langs en,de,fr,cs --k-specific 1000 --latent-size 8000 --smalr-dims 200,256,256
        --pretrain-epochs 5 --epochs "${EPOCHS:-12}" --patience "${PATIENCE:-3}" --triplet-top-n 1000 --holdout 0.1 --image-space-from indexer/assets/tower)
SUFFIX=${SUFFIX:-}
for method in ${METHODS:-la hem smalr}; do
  name="$method$SUFFIX"
  nice -n 10 polyglot train --method "$method" --out "var/towers/$name" "${COMMON[@]}" \
    --json "docs/results/r15/$name.train.json"
  POLYGLOT_TOWER_PATH="var/towers/$name" POLYGLOT_FAST_TOWER=off nice -n 10 polyglot evaluate --data "$DATA" \
    --split dev --json "docs/results/r15/$name.json" --by-source "docs/results/r15/$name.src.json"
  cp "var/towers/$name/config.json" "docs/results/r15/$name.config.json"
done
