#!/usr/bin/env bash
# Lab runbook, not part of the product (issue 14's search target, second call): on the device
# machine, where the time of `--search prior:12` goes on both sets of lab/held_out_tables.sh,
# then lab/search_quality.py run on the 6 untuned shapes of its second set, then where
# exhaustive's time goes on the first (lab/timeline.py; each from its own root and empty
# Triton cache), the timelines packed into $OUT/tl.tar.gz. On a CPU: python3 lab/summarize.py tl-*.jsonl
set -uo pipefail
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
source lab/held_out_shapes.sh
for i in 0 1; do
  root=$(mktemp -d); cp -r configs results "$root/"
  TRITON_CACHE_DIR=$root/cache TIMELINE=$OUT/tl-prior-$i.jsonl timeout 90 python3 \
    lab/timeline.py sweep matmul --dtype bf16 --shapes "${HELD_OUT[$i]}" --search prior:12 --root "$root" \
    > "$OUT/tl-prior-$i.txt" 2>&1
done
OUT=$OUT timeout 330 python3 lab/search_quality.py run ${HELD_OUT[1]//,/ } > "$OUT/sq1.txt" 2>&1
root=$(mktemp -d)
TRITON_CACHE_DIR=$root/cache TIMELINE=$OUT/tl-ex-0.jsonl timeout 150 python3 lab/timeline.py \
  sweep matmul --dtype bf16 --shapes "${HELD_OUT[0]}" --root "$root" > "$OUT/tl-ex-0.txt" 2>&1
(cd "$OUT" && tar czf tl.tar.gz tl-* && rm tl-*)
tail -n 8 "$OUT/sq1.txt"
