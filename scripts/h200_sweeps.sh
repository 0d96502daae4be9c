#!/usr/bin/env bash
# The H200 runs behind BENCHMARKS.md, in stages that each fit one 10-minute device call.
# Usage: scripts/h200_sweeps.sh OUT STAGE...   (OUT receives results/, configs/ and logs)
set -u
out=$1
shift
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
for stage in "$@"; do
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
  calibrate)
    # On top of the committed calibration.
    mkdir -p "$out/results/nvidia-h200" && cp results/nvidia-h200/ceilings.csv "$out/results/nvidia-h200/"
    timed calibrate tlab calibrate --out "$out"
    ;;
  softmax)
    mkdir -p "$out/results/nvidia-h200"
    [ -f "$out/results/nvidia-h200/ceilings.csv" ] || cp results/nvidia-h200/ceilings.csv "$out/results/nvidia-h200/"
    # Append to the committed rows, so what comes back is the whole history (rows of an
    # older kernel source never win: winners come from the newest tlab version's rows).
    cp results/nvidia-h200/softmax.csv "$out/results/nvidia-h200/"
    timed softmax tlab sweep softmax --dtype fp32,bf16 --rep-ms 50 --out "$out"
    # What `check` below must pass on: this sweep's winners, as they will be committed.
    cp "$out/configs/nvidia-h200/softmax.csv" configs/nvidia-h200/softmax.csv
    ;;
  softmax-tests)
    # The softmax tests on the GPU (split rows' programs really wait for each other here),
    # the committed-config gate for the new winners, and the speed targets.
    timed pytest-softmax timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_softmax.py
    timed check-softmax tlab check --kernel softmax
    timed targets python3 scripts/targets.py
    ;;
  confirm)
    # Resume the committed softmax and matmul sweeps: nothing new to measure, but each
    # shape's leaders and baselines are timed again in a fresh worker (sweep --confirm,
    # default 3) and the winners are chosen by those times. Then the gate on all winners.
    mkdir -p "$out/results/nvidia-h200"
    cp results/nvidia-h200/{ceilings,softmax,matmul}.csv "$out/results/nvidia-h200/"
    timed softmax-confirm tlab sweep softmax --dtype fp32,bf16 --rep-ms 50 --out "$out"
    timed matmul-confirm tlab sweep matmul --dtype bf16,fp16 --sizes 512-8192 --rep-ms 50 \
      --out "$out"
    cp "$out"/configs/nvidia-h200/{softmax,matmul}.csv configs/nvidia-h200/
    timed check-confirmed tlab check
    ;;
  rows-confirm)
    # rmsnorm and add_rmsnorm again: their committed rows predate the kernel source hash
    # in the resume key, so everything is measured again, then confirmed.
    mkdir -p "$out/results/nvidia-h200"
    cp results/nvidia-h200/{ceilings,rmsnorm,add_rmsnorm}.csv "$out/results/nvidia-h200/"
    timed rmsnorm-confirm tlab sweep rmsnorm --dtype bf16,fp32 --rep-ms 50 --out "$out"
    timed add_rmsnorm-confirm tlab sweep add_rmsnorm --dtype bf16,fp32 --rep-ms 50 --out "$out"
    cp "$out"/configs/nvidia-h200/{rmsnorm,add_rmsnorm}.csv configs/nvidia-h200/
    timed check-rows-confirmed tlab check
    timed targets-confirmed python3 scripts/targets.py
    ;;
  matmul-fp16)
    timed matmul-fp16 tlab sweep matmul --dtype fp16 --sizes 512-8192 --rep-ms 50 --out "$out"
    ;;
  faults)
    # Every planted fault on the GPU: statuses and the wall time the hang costs.
    timed planted_all tlab sweep planted_all --kernel-module tests/planted_kernels.py \
      --compile-timeout 20 --out "$out/planted"
    cut -d, -f4-10 "$out/planted/results/nvidia-h200/planted_all.csv"
    ;;
  check)
    # The CI gate with the GPU: every committed winner timed again. Then the regret of the
    # nearest-shape rule for matmul bf16 (held-out shapes tuned into results/<gpu>/regret/).
    # Then a copy in which one recorded matmul time is halved must fail.
    timed check tlab check
    timed regret tlab check --no-timing --regret --kernel matmul --dtype bf16
    mkdir -p "$out/results/nvidia-h200" && cp -r results/nvidia-h200/regret "$out/results/nvidia-h200/"
    slowed=$(mktemp -d) && cp -r configs "$slowed/"
    python3 - "$slowed/configs/nvidia-h200/matmul.csv" <<'PY'
import csv, sys
path = sys.argv[1]
rows = list(csv.DictReader(open(path)))
rows[-1]["p50_ms"] = repr(float(rows[-1]["p50_ms"]) / 2)  # as if it had been twice as fast
with open(path, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=rows[0].keys(), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
PY
    timed check-slowed tlab check --root "$slowed" --kernel matmul
    ;;
  tests)
    timed pytest python3 -m pytest -q -p no:cacheprovider
    ;;
  gpu-tests)
    timed pytest-gpu timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu
    ;;
  probe)
    timed probe timeout 240 python3 scripts/probe_rows.py
    cat "$out/logs/probe.log"
    ;;
  probe-wide)
    timed probe-wide timeout 240 python3 scripts/probe_rows.py wide
    cat "$out/logs/probe-wide.log"
    ;;
  *)
    echo "unknown stage $stage" >&2
    ;;
esac
done
# The device tool brings back few files per call: pack everything into one archive.
tar -C "$out" -czf "$out/../bundle.tgz" . && rm -rf "$out"/* && mv "$out/../bundle.tgz" "$out/"
