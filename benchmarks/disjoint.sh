#!/usr/bin/env bash
# Issue 16 (docs/results.md, round 7): disjoint collections, pseudo-pairs and translation augmentation, the
# equivalents of Kádár et al.'s Tables 2–6 on the m30k-f8k dev split, with mUSE-only towers (cheap: cached
# features). Collections, towers and pseudo-pairs go to var/ (git-ignored); dev recalls to docs/results/r7/.
# usage (repository root): benchmarks/disjoint.sh [STEP...]   steps: collections A B C D (default: all)
# Runs already done (their JSON exists) are skipped; one training at a time, 1 thread.
set -euo pipefail
PG=${PG:-.venv/bin/polyglot}
SRC=../shared/data/m30k-f8k
MORE=../shared/data/more-langs/f8k-captions.jsonl
C=var/collections
R=docs/results/r7
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$R" var/towers/r7 var/eval
# The fast tower's recipe (round 4, shipped-muse-c2c: mUSE, one hidden block of 1,024, the shipped image space),
# with the paper's max-violation hinge (α 0.2); early stopping on each collection's held-out 10 % of train photos.
BASE=(--text-encoder muse --space center-l2 --image-space-from training/assets/tower --hidden-dims 1024
  --dropouts 0.2,0.0 --beta1 0.9 --lr 1e-3 --epochs 60 --patience 6 --threads 1) # + --disjoint's --loss vse, margin 0.2

evaluate() { # NAME: dev recalls of var/towers/r7/NAME, per language (zh: the native Flickr8k-CN rows only)
  [ -f "$R/$1.json" ] || nice -n 10 $PG evaluate --data $SRC --split dev --tower "var/towers/r7/$1" \
    --extra-captions var/eval/zh-native.jsonl --json "$R/$1.json"
}
train() { # NAME OPTIONS...: a disjoint-mode training run, then its dev evaluation
  local name=$1
  shift
  if [ ! -f "var/towers/r7/$name/config.json" ]; then
    local start
    start=$(date +%s)
    nice -n 10 $PG train --disjoint "${BASE[@]}" --out "var/towers/r7/$name" "$@"
    echo "$name: $(($(date +%s) - start)) s (load $(cut -d' ' -f1 /proc/loadavg))" | tee -a "$R/timings.txt"
  fi
  evaluate "$name"
}
pseudo() { # TOWER FROM TO FILTER OUT [--with-originals]
  [ -f "$5/pseudopairs.json" ] || nice -n 10 $PG pseudopairs make --model "var/towers/r7/$1" --from "$2" --to "$3" \
    --filter "$4" --out "$5" "${@:6}"
  cp "$5/pseudopairs.json" "$R/pseudo-$(basename "$5").json"
}

collections() {
  grep '"flickr8k-cn"' $MORE >var/eval/zh-native.jsonl
  $PG collections split --data $SRC --out $C/de-pt --part de=de:multi30k-task2 --part pt=pt:framed-multi30k
  $PG collections split --data $SRC --out $C/de+pt --part all=de:multi30k-task2,pt:framed-multi30k
  $PG collections split --data $SRC --out $C/dept-pt --part dept=de:multi30k-task2,pt:framed-multi30k \
    --part pt=pt:framed-multi30k
  $PG collections split --data $SRC --extra-captions $MORE --out $C/zh-en --part zh=zh:flickr8k-cn \
    --part en=en:flickr8k --part zhmt@en=zh:multi30k-ext-mt --part enzhmt@en=en:flickr8k,zh:multi30k-ext-mt
  $PG collections split --data $SRC --extra-captions $MORE --out $C/zh+en --part all=zh:flickr8k-cn,en:flickr8k
  $PG collections split --data $SRC --out $C/en-de --part en=en:multi30k-task2 --part de=de:multi30k-task2
  $PG collections split --data $SRC --out $C/en+de --part all=en:multi30k-task2,de:multi30k-task2
}

A() { # Table 4: disjoint German | Portuguese halves; pseudo-pairs (German captions onto the Portuguese photos)
  train A-de --data $C/de-pt/de
  train A-aligned --data $C/de+pt/all --c2c-prob 0
  train A-aligned-c2c --data $C/de+pt/all
  train A-disjoint --data $C/de-pt/de --data $C/de-pt/pt
  for f in all top25 drop-bottom25; do
    pseudo A-disjoint $C/de-pt/de $C/de-pt/pt $f $C/pseudo/A-$f
    train "A-pseudo-$f" --data $C/de-pt/de --data $C/de-pt/pt --data $C/pseudo/A-$f
    train "A-pseudo-$f-ft" --data $C/de-pt/de --data $C/de-pt/pt --data $C/pseudo/A-$f \
      --init-from var/towers/r7/A-disjoint
  done
}

B() { # Table 5: aligned de+pt (c2c) on one half + Portuguese-only other half; pseudo-pairs with c2c on them
  train B-base --data $C/dept-pt/dept --data $C/dept-pt/pt
  for f in all top25 drop-bottom25; do
    pseudo B-base $C/dept-pt/dept $C/dept-pt/pt $f $C/pseudo/B-$f --with-originals
    train "B-pseudo-$f-ft" --data $C/dept-pt/dept --data $C/pseudo/B-$f --init-from var/towers/r7/B-base
  done
  for f in all top25 drop-bottom25; do # restart from scratch on the same sets
    train "B-pseudo-$f" --data $C/dept-pt/dept --data $C/pseudo/B-$f
  done
}

C() { # Table 6: disjoint Chinese (native) | English halves; + machine-translated Chinese of the English half
  train C-aligned-c2c --data $C/zh+en/all
  train C-disjoint --data $C/zh-en/zh --data $C/zh-en/en
  train C-translation --data $C/zh-en/zh --data $C/zh-en/en --data $C/zh-en/zhmt
  train C-translation-c2c --data $C/zh-en/zh --data $C/zh-en/enzhmt
  pseudo C-disjoint $C/zh-en/zh $C/zh-en/en all $C/pseudo/C-all
  train C-pseudo-all-ft --data $C/zh-en/zh --data $C/zh-en/en --data $C/pseudo/C-all --init-from var/towers/r7/C-disjoint
}

D() { # Kádár et al. 2018's artificial 50/50 split: English | German task-2 halves against the aligned set
  train D-aligned-c2c --data $C/en+de/all
  train D-disjoint --data $C/en-de/en --data $C/en-de/de
}

E() { # the product's loss (InfoNCE τ 0.03) instead of the hinge: in the disjoint trainer, and the usual recipe
  train A-disjoint-s1 --data $C/de-pt/de --data $C/de-pt/pt --seed 1 # the noise of one run: a second seed
  train E-disjoint-infonce --data $C/de-pt/de --data $C/de-pt/pt --loss infonce --temperature 0.03
  if [ ! -f var/towers/r7/E-aligned-recipe/config.json ]; then # polyglot train as before (c2c weight 0.5)
    nice -n 10 $PG train "${BASE[@]}" --data $C/de+pt/all --dev-split heldout --langs de,pt \
      --out var/towers/r7/E-aligned-recipe --loss infonce --temperature 0.03 --c2c-weight 0.5
  fi
  evaluate E-aligned-recipe
}

F() { # pseudo-pairs on top of the better loss: made by E-disjoint-infonce, fine-tuned with InfoNCE
  for f in all drop-bottom25; do
    pseudo E-disjoint-infonce $C/de-pt/de $C/de-pt/pt $f $C/pseudo/F-$f
    train "F-pseudo-$f-ft" --data $C/de-pt/de --data $C/de-pt/pt --data $C/pseudo/F-$f --loss infonce \
      --temperature 0.03 --init-from var/towers/r7/E-disjoint-infonce
  done
}

for step in "${@:-collections A B C D E F}"; do
  for s in $step; do "$s"; done
done
