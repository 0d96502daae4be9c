#!/usr/bin/env bash
# Lab runbook, not part of the product: a GPU's share of issue 52 as resumable device calls.
# Run from the repository root on the device machine, once per call (a call lasts at most
# 600 s; the machine stays warm 30 s after it), again until it prints "all done":
#
#   bash lab/gpu_plan.sh sweeps         # a GPU without configs: the main job from an empty
#                                       #   root, calibrate, every kernel swept (the H100's
#                                       #   first session ran this as lab/h100_sweeps.sh)
#   bash lab/gpu_plan.sh gates          # the H100 after its sweeps: add_rmsnorm and softmax
#                                       #   swept again (--fresh: their first sweep ran out of
#                                       #   memory), host-times, three checks, ops-bench, the
#                                       #   H200's winners timed here (tlab portability)
#   bash lab/gpu_plan.sh slack2         # lab/launch_profile.py, model-bench x4 and ops-bench
#                                       #   after HOST_SLACK 2, with the rounds' intervals; the
#                                       #   launch profile with TLAB_FAST_LAUNCH=1
#   bash lab/gpu_plan.sh portability    # the H200: the H100's winners timed here
#   bash lab/gpu_plan.sh refresh        # the H100: the H200's softmax winners timed here again
#                                       #   (a row compares with a winner since replaced); fp8
#                                       #   8192^3, where the H200's config ran 0.937x the
#                                       #   H100's own winner's time, swept again, host-times,
#                                       #   and fp8's portability again
#   bash lab/gpu_plan.sh reconfirm      # the H100: softmax fp32's two shapes whose 12-06
#                                       #   confirmations ran out of memory confirmed again
#                                       #   (a resumed sweep does it), the H200's softmax fp32
#                                       #   winners timed beside them, ops-bench on this
#                                       #   host's times
#   bash lab/gpu_plan.sh models         # issue 51 on either GPU: the model-bench's shapes
#                                       #   recorded (lab/record_model_shapes.py) and swept
#                                       #   (--shapes-from, prior search), host-times, then
#                                       #   model-bench (per width, prefill then decode) and
#                                       #   ops-bench on those configs
#   bash lab/gpu_plan.sh followup       # the H100 after models and gates: softmax fp32
#                                       #   8192x65536 swept whole, host-times, a fourth check,
#                                       #   model-bench (with host times) and ops-bench again
#   bash lab/gpu_plan.sh turns          # model-bench x4, each variant timed in turns with its
#                                       #   PyTorch counterpart
#   bash lab/gpu_plan.sh next           # ops-bench, the 1b 8x512 ablation, model-bench 1b
#   bash lab/gpu_plan.sh loops          # ops-bench, model-bench x4 timing loops of calls,
#                                       #   addmm's bias pass (lab/addmm_bias.py)
#   bash lab/gpu_plan.sh addmm          # model-bench x4 after ops.addmm became torch.addmm
#   bash lab/gpu_plan.sh last           # 1b decode again, the 1b 1x2048 ablation
#   bash lab/gpu_plan.sh bind           # ops-bench with ops.bind's eager column (either GPU)
#   bash lab/gpu_plan.sh paired         # ops-bench, model-bench x4, ratios the medians of the
#                                       #   rounds' ratios; the 7b ablation
#   bash lab/gpu_plan.sh slack          # ops-bench and model-bench x4 after HOST_SLACK
#   bash lab/gpu_plan.sh models gates   # several plans: their steps in that order (a step
#                                       #   of the same name runs once)
#
# Everything runs in one root kept on the machine between calls (/root/plan: a copy of the
# checkout's results/ and configs/ on the first call; the sweeps plan starts it empty). Each
# call starts no step its estimate says would not end within DEADLINE seconds, and packs this
# GPU's results/, configs/ and the logs into $OUT/plan.tar.gz: unpack it over the checkout
# (tar xzf plan.tar.gz; the logs go to logs/, which git ignores). Steps done are marked in
# logs/done/: a fresh machine given the checkout's logs/ (run's carry: ["logs"]) resumes there.
set -uo pipefail
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
ROOT=${ROOT:-/root/plan}
DEADLINE=${DEADLINE:-560}
[ $# -gt 0 ] || { echo "which plan? sweeps, gates, followup, turns, rule, next, loops, addmm, last, bind, paired, slack, slack2, portability, refresh, reconfirm or models" >&2; exit 2; }
begin=$(date +%s)
if [ ! -d "$ROOT" ]; then
  mkdir -p "$ROOT"
  [ "$1" = sweeps ] || cp -r results configs "$ROOT/"
  [ -d logs ] && cp -r logs "$ROOT/"  # a fresh machine: the steps done on the last one
fi
mkdir -p "$OUT" "$ROOT/logs/done"
export TLAB_CONFIG_DIR=$ROOT/configs  # ops-bench reads the plan's configs
nvidia-smi --query-gpu=name,serial,driver_version --format=csv,noheader | tee -a "$ROOT/logs/gpu.txt"
slug=$(python3 -c "import torch; from tritonbench_lab.data.layout import slugify; \
print(slugify(torch.cuda.get_device_name()))")

# A plan for one GPU says so and adds nothing on another.
runs_on() { [ "$slug" = "$1" ] || { echo "$plan skipped: it needs $1, this is $slug"; return 1; }; }

# name | estimate in s | command (run as `python3 -m tritonbench_lab COMMAND --root ROOT`)
STEPS=()
for plan in "$@"; do
case "$plan" in
  sweeps) STEPS+=(
    "main|75|sweep matmul --dtype bf16 --sizes 512-8192"
    "calibrate|60|calibrate"
    "matmul-bf16|160|sweep matmul --dtype bf16"
    "matmul-fp16|70|sweep matmul --dtype fp16 --sizes 512-8192"
    "matmul_fp8|180|sweep matmul_fp8 --dtype fp8e4m3"
    "matmul_gelu|190|sweep matmul_gelu --dtype bf16"
    "rmsnorm|110|sweep rmsnorm --dtype fp32,bf16"
    "add_rmsnorm|180|sweep add_rmsnorm --dtype fp32,bf16"
    "add|90|sweep add --dtype fp32,bf16"
    "layernorm|160|sweep layernorm --dtype fp32,bf16"
    "rope|120|sweep rope --dtype fp32,bf16"
    "softmax|300|sweep softmax --dtype fp32,bf16") ;;
  gates) STEPS+=(
    "add_rmsnorm|180|sweep add_rmsnorm --dtype fp32,bf16 --fresh"
    # softmax's first sweep ran out of memory and its exhaustive re-sweep took 560 s for 4 of
    # its 20 shapes: the other 16 by the prior search, a few shapes a step (a step cut off by
    # the call's limit measures its shapes again from the start: --fresh)
    "softmax-fp32-a|250|sweep softmax --dtype fp32 --fresh --search prior:64 --shapes 8192x1024,8192x4096,8192x8192"
    "softmax-fp32-b|150|sweep softmax --dtype fp32 --fresh --search prior:64 --shapes 8192x16384,8192x32768,512x1048576"
    "softmax-bf16-a|100|sweep softmax --dtype bf16 --fresh --search prior:64 --shapes 8192x1024,8192x4096,8192x8192,8192x16384"
    "softmax-bf16-b|150|sweep softmax --dtype bf16 --fresh --search prior:64 --shapes 8192x32768,8192x65536,4096x131072"
    "softmax-bf16-c|150|sweep softmax --dtype bf16 --fresh --search prior:64 --shapes 2048x262144,1024x524288,512x1048576"
    "host-times-gates|90|host-times"
    "check-1|170|check --gpu-name $slug"
    "check-2|170|check --gpu-name $slug"
    "check-3|170|check --gpu-name $slug"
    "ops-bench|200|ops-bench --out $ROOT/logs/ops-bench.md"
    "portability|300|portability nvidia-h200") ;;
  followup) STEPS+=(
    # issue 52: softmax fp32 8192x65536, whose sweep a call's limit cut mid-shape (0.88 of the
    # copy; the H200's config ran 1.13x faster there), swept whole, then the gate again
    "softmax-fp32-65536|250|sweep softmax --dtype fp32 --fresh --shapes 8192x65536"
    "host-times-followup|60|host-times"
    "check-4|170|check --gpu-name $slug"
    # issue 51: model-bench again with its host-time column, and ops-bench, on the code of the
    # compiled graph's rule
    "mb2-1b-prefill|90|model-bench --width 1b --workload prefill --out $ROOT/logs/mb2-1b-prefill.md"
    "mb2-7b-prefill|90|model-bench --width 7b --workload prefill --out $ROOT/logs/mb2-7b-prefill.md"
    "mb2-1b-decode|90|model-bench --width 1b --workload decode --out $ROOT/logs/mb2-1b-decode.md"
    "mb2-7b-decode|90|model-bench --width 7b --workload decode --out $ROOT/logs/mb2-7b-decode.md"
    "ops-bench-2|200|ops-bench --out $ROOT/logs/ops-bench-2.md") ;;
  turns) STEPS+=(
    # issue 51: model-bench with each variant timed in turns with its counterpart (3 rounds)
    "mb3-1b-prefill|90|model-bench --width 1b --workload prefill --out $ROOT/logs/mb3-1b-prefill.md"
    "mb3-7b-prefill|90|model-bench --width 7b --workload prefill --out $ROOT/logs/mb3-7b-prefill.md"
    "mb3-1b-decode|90|model-bench --width 1b --workload decode --out $ROOT/logs/mb3-1b-decode.md"
    "mb3-7b-decode|90|model-bench --width 7b --workload decode --out $ROOT/logs/mb3-7b-decode.md") ;;
  rule) STEPS+=(  # the same after FUSED_MARGIN held for matmuls too
    "mb4-7b-prefill|60|model-bench --width 7b --workload prefill --out $ROOT/logs/mb4-7b-prefill.md"
    "mb4-1b-prefill|70|model-bench --width 1b --workload prefill --out $ROOT/logs/mb4-1b-prefill.md"
    "mb4-1b-decode|60|model-bench --width 1b --workload decode --out $ROOT/logs/mb4-1b-decode.md"
    "mb4-7b-decode|60|model-bench --width 7b --workload decode --out $ROOT/logs/mb4-7b-decode.md") ;;
  next) STEPS+=(  # issue 51 after the fast path for calls run as the op eagerly only
    "ops-bench-3|160|ops-bench --out $ROOT/logs/ops-bench-3.md"
    "ablation-1b-8x512|150|lab/compiled_block_ablation.py 1b prefill_8x512"
    "mb5-1b-decode|70|model-bench --width 1b --workload decode --out $ROOT/logs/mb5-1b-decode.md"
    "mb5-1b-prefill|70|model-bench --width 1b --workload prefill --out $ROOT/logs/mb5-1b-prefill.md") ;;
  loops) STEPS+=(  # issue 51: model-bench timing loops of calls; ops' leaner fast path
    "ops-bench-4|160|ops-bench --out $ROOT/logs/ops-bench-4.md"
    "mb6-1b-decode|70|model-bench --width 1b --workload decode --out $ROOT/logs/mb6-1b-decode.md"
    "mb6-7b-decode|70|model-bench --width 7b --workload decode --out $ROOT/logs/mb6-7b-decode.md"
    "addmm-bias|40|lab/addmm_bias.py"
    "mb6-1b-prefill|60|model-bench --width 1b --workload prefill --out $ROOT/logs/mb6-1b-prefill.md"
    "mb6-7b-prefill|60|model-bench --width 7b --workload prefill --out $ROOT/logs/mb6-7b-prefill.md") ;;
  addmm) STEPS+=(  # issue 51 after ops.addmm became torch.addmm (its bias pass cost more)
    "mb7-1b-prefill|40|model-bench --width 1b --workload prefill --out $ROOT/logs/mb7-1b-prefill.md"
    "mb7-7b-prefill|40|model-bench --width 7b --workload prefill --out $ROOT/logs/mb7-7b-prefill.md"
    "mb7-1b-decode|50|model-bench --width 1b --workload decode --out $ROOT/logs/mb7-1b-decode.md"
    "mb7-7b-decode|50|model-bench --width 7b --workload decode --out $ROOT/logs/mb7-7b-decode.md") ;;
  last) STEPS+=(  # issue 51: 1b decode again (0.69x compiled b1 on a slow host), the 1x2048 ablation
    "mb8-1b-decode|45|model-bench --width 1b --workload decode --out $ROOT/logs/mb8-1b-decode.md"
    "ablation-1b-1x2048|40|lab/compiled_block_ablation.py 1b prefill_1x2048") ;;
  bind) STEPS+=(  # issue 51: ops-bench with ops.bind's column, on this GPU's configs
    "ops-bench-5-$slug|170|ops-bench --out $ROOT/logs/ops-bench-5-$slug.md"
    "addmm-bias-2-$slug|50|lab/addmm_bias.py") ;;  # and a prepared linear with a bias
  paired) STEPS+=(  # issue 51: the same, each ratio the median of its rounds' ratios
    "ops-bench-7-$slug|160|ops-bench --out $ROOT/logs/ops-bench-7-$slug.md"
    "mb10-1b-decode-$slug|65|model-bench --width 1b --workload decode --out $ROOT/logs/mb10-1b-decode-$slug.md"
    "mb10-7b-decode-$slug|65|model-bench --width 7b --workload decode --out $ROOT/logs/mb10-7b-decode-$slug.md"
    "mb10-1b-prefill-$slug|50|model-bench --width 1b --workload prefill --out $ROOT/logs/mb10-1b-prefill-$slug.md"
    "mb10-7b-prefill-$slug|50|model-bench --width 7b --workload prefill --out $ROOT/logs/mb10-7b-prefill-$slug.md"
    "ablation-7b-1x2048-$slug|45|lab/compiled_block_ablation.py 7b prefill_1x2048") ;;
  slack) STEPS+=(  # issue 51: ops-bench after eager choices reckon with a slower host
    "ops-bench-8-$slug|160|ops-bench --out $ROOT/logs/ops-bench-8-$slug.md"
    "mb11-1b-decode-$slug|65|model-bench --width 1b --workload decode --out $ROOT/logs/mb11-1b-decode-$slug.md"
    "mb11-7b-decode-$slug|65|model-bench --width 7b --workload decode --out $ROOT/logs/mb11-7b-decode-$slug.md"
    "mb11-1b-prefill-$slug|50|model-bench --width 1b --workload prefill --out $ROOT/logs/mb11-1b-prefill-$slug.md"
    "mb11-7b-prefill-$slug|50|model-bench --width 7b --workload prefill --out $ROOT/logs/mb11-7b-prefill-$slug.md") ;;
  slack2) STEPS+=(  # issue 51: where tlab's launch spends host time, ops-bench after HOST_SLACK 2
    "launch-profile-$slug|40|lab/launch_profile.py"
    "mb12-1b-prefill-$slug|50|model-bench --width 1b --workload prefill --out $ROOT/logs/mb12-1b-prefill-$slug.md"
    "mb12-1b-decode-$slug|65|model-bench --width 1b --workload decode --out $ROOT/logs/mb12-1b-decode-$slug.md"
    "mb12-7b-decode-$slug|65|model-bench --width 7b --workload decode --out $ROOT/logs/mb12-7b-decode-$slug.md"
    "mb12-7b-prefill-$slug|50|model-bench --width 7b --workload prefill --out $ROOT/logs/mb12-7b-prefill-$slug.md"
    "ops-bench-9-$slug|160|ops-bench --out $ROOT/logs/ops-bench-9-$slug.md"
    "launch-profile-fast-$slug|40|lab/launch_profile.py --fast") ;;
  refresh)
    runs_on nvidia-h100-80gb-hbm3 || continue
    STEPS+=(
    "portability-softmax-again|70|portability nvidia-h200 --kernel softmax"
    "fp8-8192-again|200|sweep matmul_fp8 --dtype fp8e4m3 --fresh --shapes 8192x8192x8192"
    "host-times-refresh|60|host-times"
    "portability-fp8-again|60|portability nvidia-h200 --kernel matmul_fp8") ;;
  reconfirm)
    runs_on nvidia-h100-80gb-hbm3 || continue
    STEPS+=(
    "softmax-fp32-reconfirm|60|sweep softmax --dtype fp32"
    "portability-softmax-fp32|50|portability nvidia-h200 --kernel softmax --dtype fp32"
    "ops-bench-refresh|200|ops-bench --out $ROOT/logs/ops-bench-refresh.md") ;;
  portability)  # the H100's winners timed on an H200: one step per kernel (the matmul family
    # first), so that a call short of device time starts the steps that fit; each estimate
    # from the pairs it times (the H200's winners on the H100: 4 s a matmul pair, 2.7 s a
    # row-kernel pair). A kernel with rows in the committed results is done (a new checkout
    # has no logs/done/).
    runs_on nvidia-h200 || continue
    while read -r kernel estimate; do
      STEPS+=("portability-of-h100-$kernel|$estimate|portability nvidia-h100-80gb-hbm3 --kernel $kernel")
    done < <(python3 - <<'PY'
import csv, pathlib
def shapes(gpu, kernel):
    with open(f"configs/{gpu}/{kernel}.csv") as f:
        return {(r["dtype"], r["shape"]) for r in csv.DictReader(f)}
kernels = sorted(p.stem for p in pathlib.Path("configs/nvidia-h100-80gb-hbm3").glob("*.csv"))
timed = pathlib.Path("results/nvidia-h200/portability/nvidia-h100-80gb-hbm3.csv")
done = {r["kernel"] for r in csv.DictReader(timed.open())} if timed.is_file() else set()
for k in sorted(set(kernels) - done, key=lambda k: (not k.startswith("matmul"), k)):
    mine = pathlib.Path(f"configs/nvidia-h200/{k}.csv")
    n = len(shapes("nvidia-h100-80gb-hbm3", k) & shapes("nvidia-h200", k)) if mine.is_file() else 0
    print(k, round(10 + (4 if k.startswith("matmul") else 2.7) * n))
PY
) ;;
  models) STEPS+=(
    "record|60|lab/record_model_shapes.py $ROOT/logs/model-shapes.csv"
    "sweep-recorded|300|sweep --shapes-from $ROOT/logs/model-shapes.csv --search prior:64"
    "host-times-models|120|host-times"
    "mb-1b-prefill|90|model-bench --width 1b --workload prefill --out $ROOT/logs/mb-1b-prefill.md"
    "mb-7b-prefill|90|model-bench --width 7b --workload prefill --out $ROOT/logs/mb-7b-prefill.md"
    "ops-bench|200|ops-bench --out $ROOT/logs/ops-bench.md"
    "mb-1b-decode|90|model-bench --width 1b --workload decode --out $ROOT/logs/mb-1b-decode.md"
    "mb-7b-decode|90|model-bench --width 7b --workload decode --out $ROOT/logs/mb-7b-decode.md")
    ;;
  *) echo "unknown plan $plan: sweeps, gates, followup, turns, rule, next, loops, addmm, last, bind, paired, slack, slack2, portability, refresh, reconfirm or models" >&2; exit 2 ;;
esac
done

left=0
for step in "${STEPS[@]}"; do
  IFS='|' read -r name estimate command <<< "$step"
  [ -e "$ROOT/logs/done/$name" ] && continue
  remaining=$(( DEADLINE - ($(date +%s) - begin) ))
  if [ "$remaining" -lt "$estimate" ]; then left=$((left + 1)); continue; fi
  start=$(date +%s)
  root_option="--root $ROOT"
  # these read TLAB_CONFIG_DIR (the plan's configs) and take no --root
  [[ $name == ops-bench* || $name == mb* || $name == record || $name == ablation* ||
     $name == addmm* || $name == launch-profile* ]] &&
    root_option=""
  runner="-m tritonbench_lab"
  [[ $command == lab/* ]] && runner=""  # a lab script, run as a file
  # shellcheck disable=SC2086
  timeout "$remaining" python3 $runner $command $root_option \
    > "$ROOT/logs/$name.txt" 2>&1
  rc=$?
  echo "rc $rc in $(( $(date +%s) - start )) s: tlab $command" | tee -a "$ROOT/logs/$name.txt"
  # a check that finds a slow winner exits 1: it has measured what it was run for
  if [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && [[ $name == check-* ]]; }; then
    touch "$ROOT/logs/done/$name"
  else
    left=$((left + 1))
  fi
  tail -4 "$ROOT/logs/$name.txt"
done
tar czf "$OUT/plan.tar.gz" -C "$ROOT" "results/$slug" "configs/$slug" logs
[ "$left" -eq 0 ] && echo "all done" || echo "$left steps left: run again"
