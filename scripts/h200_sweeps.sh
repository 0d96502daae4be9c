#!/usr/bin/env bash
# The H200 runs behind BENCHMARKS.md, in stages that each fit one 10-minute device call.
# Usage: scripts/h200_sweeps.sh STAGE OUT   (OUT receives results/, configs/ and logs)
set -u
stage=$1
out=$2
mkdir -p "$out/logs"
export PYTHONPATH=${PYTHONPATH:-.} PYTHONUNBUFFERED=1 COLUMNS=160
tlab() { python3 -m tritonbench_lab "$@"; }
timed() {  # timed NAME COMMAND...: run, keep the log, record the wall time
  local name=$1; shift
  local start=$EPOCHREALTIME
  "$@" > "$out/logs/$name.log" 2>&1
  local rc=$?
  printf '%s\t%s s\trc=%s\t%s\n' "$name" "$(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $start}")" "$rc" "$*" \
    | tee -a "$out/logs/walltime.tsv"
  tail -n 25 "$out/logs/$name.log"
}
case $stage in
  matmul-bf16)
    timed calibrate tlab calibrate --out "$out"
    timed matmul-bf16 tlab sweep matmul --dtype bf16 --sizes 512-8192 --rep-ms 50 --out "$out"
    ;;
  rows)
    # Measure against the committed calibration of this GPU (for % of ceiling).
    mkdir -p "$out/results/nvidia-h200" && cp results/nvidia-h200/ceilings.csv "$out/results/nvidia-h200/"
    # Planted faults go to their own folder: test evidence, not product results.
    timed planted_fault tlab sweep planted_fault --kernel-module tests/planted_kernels.py \
      --out "$out/planted"
    cut -d, -f4-12 "$out/planted/results/nvidia-h200/planted_fault.csv"
    timed softmax tlab sweep softmax --dtype fp32,bf16 --rep-ms 50 --out "$out"
    timed rmsnorm tlab sweep rmsnorm --dtype bf16,fp32 --rep-ms 50 --out "$out"
    timed add_rmsnorm tlab sweep add_rmsnorm --dtype bf16,fp32 --rep-ms 50 --out "$out"
    ;;
  matmul-fp16)
    timed matmul-fp16 tlab sweep matmul --dtype fp16 --sizes 512-8192 --rep-ms 50 --out "$out"
    ;;
  tests)
    timed planted_fault tlab sweep planted_fault --kernel-module tests/planted_kernels.py \
      --out "$out/planted"
    cut -d, -f4-10 "$out/planted/results/nvidia-h200/planted_fault.csv"
    timed pytest python3 -m pytest -q -p no:cacheprovider
    ;;
esac
# The device tool brings back few files per call: pack everything into one archive.
tar -C "$out" -czf "$out/../bundle.tgz" . && rm -rf "$out"/* && mv "$out/../bundle.tgz" "$out/"
