#!/usr/bin/env bash
# Lab runbook, not part of the product (issue 52, the H100 half): on an H100 device machine,
# the main job from an empty root, `tlab calibrate`, then every built-in kernel swept at the
# default shapes and the dtypes the H200's committed files hold, all into one root kept on
# the machine (/root/h100) between calls. Each call runs the steps left, starting none that
# its estimate says would not finish before DEADLINE seconds, and packs the GPU's results/
# and configs/ into $OUT/h100.tar.gz (unpack over the checkout: tar xzf h100.tar.gz).
# Run it again in the next call (the machine stays warm 30 s) until it prints "all done".
#
#   bash lab/h100_sweeps.sh            # DEADLINE=560 by default
set -uo pipefail
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
ROOT=${ROOT:-/root/h100}
DEADLINE=${DEADLINE:-560}
mkdir -p "$OUT" "$ROOT/.done" "$ROOT/logs"
begin=$(date +%s)
nvidia-smi --query-gpu=name,serial,driver_version,clocks.max.sm --format=csv,noheader \
  | tee -a "$ROOT/logs/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$ROOT/logs/gpu.txt"

# name | estimate in s (the H200's time for the same command, plus a sixth) | command
STEPS=(
  "main|75|sweep matmul --dtype bf16 --sizes 512-8192"
  "calibrate|60|calibrate"
  "matmul-bf16|160|sweep matmul --dtype bf16"
  "matmul-fp16|70|sweep matmul --dtype fp16 --sizes 512-8192"
  "matmul_fp8|180|sweep matmul_fp8 --dtype fp8e4m3"
  "matmul_gelu|190|sweep matmul_gelu --dtype bf16"
  "rmsnorm|95|sweep rmsnorm --dtype fp32,bf16"
  "add_rmsnorm|115|sweep add_rmsnorm --dtype fp32,bf16"
  "add|90|sweep add --dtype fp32,bf16"
  "layernorm|150|sweep layernorm --dtype fp32,bf16"
  "rope|120|sweep rope --dtype fp32,bf16"
  "softmax|265|sweep softmax --dtype fp32,bf16"
)
left=0
for step in "${STEPS[@]}"; do
  IFS='|' read -r name estimate command <<< "$step"
  [ -e "$ROOT/.done/$name" ] && continue
  remaining=$(( DEADLINE - ($(date +%s) - begin) ))
  if [ "$remaining" -lt "$estimate" ]; then left=$((left + 1)); continue; fi
  start=$(date +%s)
  # The main job runs first, from the empty root and with the machine's empty Triton cache.
  # shellcheck disable=SC2086
  timeout "$remaining" python3 -m tritonbench_lab $command --root "$ROOT" \
    > "$ROOT/logs/$name.txt" 2>&1
  rc=$?
  echo "rc $rc in $(( $(date +%s) - start )) s: tlab $command" | tee -a "$ROOT/logs/$name.txt"
  if [ "$rc" -eq 0 ]; then touch "$ROOT/.done/$name"; else left=$((left + 1)); fi
  tail -4 "$ROOT/logs/$name.txt"
done
tar czf "$OUT/h100.tar.gz" -C "$ROOT" results configs logs
[ "$left" -eq 0 ] && echo "all done" || echo "$left steps left: run again"
