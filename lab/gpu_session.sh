#!/usr/bin/env bash
# Lab runbook, not part of the product: the open GPU work of the 2026-12-05 closing note,
# as device calls of at most 600 s each, everything worth keeping packed into $OUT (a call
# returns at most 8 files). Run from the repository root on the device machine:
#
#   bash lab/gpu_session.sh tests     # ~5 min: GPU tests (launch through Triton, then
#                                     #   TLAB_FAST_LAUNCH=1), lab/launch_host_time.py
#   bash lab/gpu_session.sh host      # tlab host-times for every kernel, then ops-bench
#                                     #   (set TLAB_FAST_LAUNCH=1 first if `tests` showed
#                                     #   it saves enough and it became the default)
#   bash lab/gpu_session.sh search    # lab/search_quality.py run (issue 14), the main job
#
# After `host`: unpack $OUT's results-configs.tar.gz over this checkout, commit, make plots.
set -uo pipefail
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=$PWD
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
step=${1:?tests, host or search}
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" \
  | tee -a "$OUT/gpu.txt"
case "$step" in
  tests)
    files="tests/test_launching.py tests/test_ops.py tests/test_timing.py tests/test_check_export.py tests/test_hosttimes.py"
    timeout 200 python3 -m pytest -q -m gpu $files > "$OUT/gpu-tests.txt" 2>&1
    echo "rc $?" >> "$OUT/gpu-tests.txt"
    TLAB_FAST_LAUNCH=1 timeout 200 python3 -m pytest -q -m gpu $files > "$OUT/gpu-tests-fast.txt" 2>&1
    echo "rc $?" >> "$OUT/gpu-tests-fast.txt"
    timeout 120 python3 lab/launch_host_time.py > "$OUT/launch-host-time.txt" 2>&1
    tail -3 "$OUT"/gpu-tests*.txt
    ;;
  host)
    start=$(date +%s)
    timeout 330 python3 -m tritonbench_lab host-times > "$OUT/host-times.txt" 2>&1
    echo "rc $? in $(( $(date +%s) - start )) s" >> "$OUT/host-times.txt"
    tar czf "$OUT/results-configs.tar.gz" results configs
    timeout 230 python3 -m tritonbench_lab ops-bench > "$OUT/ops-bench.txt" 2>&1
    echo "rc $?" >> "$OUT/ops-bench.txt"
    tail -5 "$OUT/host-times.txt" "$OUT/ops-bench.txt"
    ;;
  search)
    OUT=$OUT timeout 400 python3 lab/search_quality.py run > "$OUT/search-quality.txt" 2>&1
    root=$(mktemp -d)
    start=$(date +%s)
    timeout 150 python3 -m tritonbench_lab sweep matmul --dtype bf16 --sizes 512-8192 \
      --root "$root" > "$OUT/main-job.txt" 2>&1
    echo "rc $? in $(( $(date +%s) - start )) s" >> "$OUT/main-job.txt"
    tail -3 "$OUT/search-quality.txt" "$OUT/main-job.txt"
    ;;
  *) echo "unknown step $step: tests, host or search" >&2; exit 2 ;;
esac
