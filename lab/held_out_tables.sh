#!/usr/bin/env bash
# Lab runbook, not part of the product (issue 14's search target): on the device machine,
# exhaustive sweeps of the 6 held-out matmul shapes (lab/search_quality.py's) and of 6 more
# shapes tuned nowhere, each from an empty root with its own Triton cache, their rows packed
# into $OUT/held.tar.gz: tables that prior variants can be replayed against on a CPU. Then
# lab/search_quality.py run (exhaustive again, prior:12, winners alone, picks in turns).
# Afterwards, on a CPU: tar xzf held.tar.gz -C HELD; PYTHONPATH=. python3
# lab/replay_held_out.py HELD/set*/results/nvidia-h200/matmul.csv
set -uo pipefail
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,serial --format=csv,noheader > "$OUT/gpu.txt"
source lab/held_out_shapes.sh
pack=$(mktemp -d)
for i in 0 1; do
  root=$(mktemp -d)
  start=$(date +%s)
  TRITON_CACHE_DIR=$root/cache timeout 200 python3 -m tritonbench_lab sweep matmul --dtype bf16 \
    --shapes "${HELD_OUT[$i]}" --root "$root" > "$OUT/exhaustive-$i.txt" 2>&1
  echo "rc $? in $(( $(date +%s) - start )) s" >> "$OUT/exhaustive-$i.txt"
  mkdir -p "$pack/set$i" && cp -r "$root/results" "$root/configs" "$pack/set$i/"
done
tar czf "$OUT/held.tar.gz" -C "$pack" .
OUT=$OUT timeout 250 python3 lab/search_quality.py run > "$OUT/search-quality.txt" 2>&1
tail -2 "$OUT"/exhaustive-*.txt "$OUT/search-quality.txt"
