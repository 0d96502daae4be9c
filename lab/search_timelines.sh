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
S0=768x768x768,1536x1536x1536,3072x3072x3072,6144x6144x6144,4096x4096x1024,2048x8192x4096
S1=1280x1280x1280,2560x2560x2560,3584x3584x3584,1024x4096x4096,8192x1024x2048,4096x2048x8192
for i in 0 1; do
  S=S$i; root=$(mktemp -d); cp -r configs results "$root/"
  TRITON_CACHE_DIR=$root/cache TIMELINE=$OUT/tl-prior-$i.jsonl timeout 90 python3 \
    lab/timeline.py sweep matmul --dtype bf16 --shapes "${!S}" --search prior:12 --root "$root" \
    > "$OUT/tl-prior-$i.txt" 2>&1
done
OUT=$OUT timeout 330 python3 lab/search_quality.py run ${S1//,/ } > "$OUT/sq1.txt" 2>&1
root=$(mktemp -d)
TRITON_CACHE_DIR=$root/cache TIMELINE=$OUT/tl-ex-0.jsonl timeout 150 python3 lab/timeline.py \
  sweep matmul --dtype bf16 --shapes "$S0" --root "$root" > "$OUT/tl-ex-0.txt" 2>&1
(cd "$OUT" && tar czf tl.tar.gz tl-* && rm tl-*)
tail -n 8 "$OUT/sq1.txt"
