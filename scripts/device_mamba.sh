#!/usr/bin/env bash
# mamba's selective scan on a GPU (issue 30, acceptance 1): the extension built with torch's
# cpp_extension (mamba's own setup.py, its default archs) from the checkout as it is (ORIGINAL) and
# from a copy migrated by PATCH (MIGRATED: rules/mamba.yaml's `codemod apply --diff`, made and
# verified on a CPU host: docs/results/mamba_apply.md), one after the other on the same machine and
# timed; then tests/device/mamba_driver.py calls each build's selective_scan_cuda.fwd/.bwd over the
# shapes and flags of mamba's tests/ops/test_selective_scan.py (6,720 cases, every one of the 1,440
# kernel variants), in SHARDS processes, and the output files must be equal byte for byte (the
# original is run twice first: the control that its outputs reproduce). Then fwd + bwd timings of
# both (--bench), mamba's own selective-scan tests against the migrated build when they can run
# (einops and mamba_ssm's imports present), and with LEGACY=1 the migrated tree's legacy build
# (MAMBA_BUILD_LEGACY_STATIC_SELECTIVE_SCAN=1) run with MAMBA_DISABLE_NVRTC=1 against the original.
# Written by a session without device time: not run yet.
#
#   scripts/device_mamba.sh MAMBA_CHECKOUT PATCH OUT
#
# MAMBA_CHECKOUT: state-spaces/mamba's repository root (e9594ce was migrated and verified on CPU); it
# is copied, never modified. PATCH: the migration (kept out of the repository: it holds mamba's
# code). Needs a Python with torch (CUDA build), packaging, wheel and ninja, and nvcc; PYTHON picks it.
set -euo pipefail
SRC=$(cd "${1:?usage: scripts/device_mamba.sh MAMBA_CHECKOUT PATCH OUT}" && pwd)
PATCH=$(readlink -f "${2:?usage: scripts/device_mamba.sh MAMBA_CHECKOUT PATCH OUT}")
OUT=$(mkdir -p "${3:?usage: scripts/device_mamba.sh MAMBA_CHECKOUT PATCH OUT}" && cd "$3" && pwd)
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
SHARDS=${SHARDS:-$(nproc)}
WORK=$(mktemp -d)
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
export MAX_JOBS=${MAX_JOBS:-$(nproc)}
# the migrated extension links the toolkit's libnvrtc (setup.py's libraries=["nvrtc"]); the layer
# finds the toolkit's headers (cub under include/cccl) through CUDA_HOME at run time
export LD_LIBRARY_PATH=$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
sides=(original migrated)
[ "${LEGACY:-0}" = 1 ] && sides+=(legacy)

for side in "${sides[@]}"; do
  mkdir -p "$WORK/$side"
  (cd "$SRC" && git archive HEAD) | tar -x -C "$WORK/$side"
  if [ "$side" != original ]; then
    (cd "$WORK/$side" && git init -q . && git apply "$PATCH")
  fi
done

build() {  # build SIDE [ENV...]: mamba's setup.py, in place, timed; its ninja log kept
  local side=$1; shift
  local t0; t0=$(date +%s.%N)
  (cd "$WORK/$side" && env "$@" MAMBA_FORCE_BUILD=TRUE MAMBA_KEEP_CUDA_BUILD=TRUE \
     "$PYTHON" setup.py build_ext --inplace) > "$OUT/build_$side.log" 2>&1
  echo "$side build: $(echo "$(date +%s.%N) - $t0" | bc) s (MAX_JOBS=$MAX_JOBS)" | tee -a "$OUT/summary.txt"
  find "$WORK/$side/build" -name .ninja_log -exec cp {} "$OUT/ninja_log_$side" \;
}
build original
build migrated
[ "${LEGACY:-0}" = 1 ] && build legacy MAMBA_BUILD_LEGACY_STATIC_SELECTIVE_SCAN=1

drive() {  # drive SIDE NAME [ENV...]: every case, SHARDS processes (the first-use compiles run in parallel)
  local side=$1 name=$2; shift 2
  local t0; t0=$(date +%s.%N)
  for i in $(seq 0 $((SHARDS - 1))); do
    env "$@" PYTHONPATH="$WORK/$side" "$PYTHON" "$REPO/tests/device/mamba_driver.py" \
      "$OUT/$name.$i.bin" --shard "$i/$SHARDS" >> "$OUT/driver_$name.log" 2>&1 &
  done
  wait
  echo "$name: $SHARDS shards in $(echo "$(date +%s.%N) - $t0" | bc) s" | tee -a "$OUT/summary.txt"
}
same() {  # same A B: every shard's file equal
  for i in $(seq 0 $((SHARDS - 1))); do cmp -s "$OUT/$1.$i.bin" "$OUT/$2.$i.bin" || return 1; done
}
drive original original
drive original original_again
drive migrated migrated
status=0
for pair in "original_again original (control: the original reproduces itself)" "migrated original"; do
  set -- $pair
  if same "$1" "$2"; then echo "$1: byte-equal to $2" | tee -a "$OUT/summary.txt"
  else echo "$1: DIFFERS from $2" | tee -a "$OUT/summary.txt"; status=1; fi
done
if [ "${LEGACY:-0}" = 1 ]; then
  drive legacy legacy MAMBA_DISABLE_NVRTC=1
  if same legacy original; then echo "legacy (static, MAMBA_DISABLE_NVRTC=1): byte-equal to original" | tee -a "$OUT/summary.txt"
  else echo "legacy: DIFFERS from original" | tee -a "$OUT/summary.txt"; status=1; fi
fi

for side in original migrated; do
  PYTHONPATH="$WORK/$side" "$PYTHON" "$REPO/tests/device/mamba_driver.py" "$OUT/bench_$side.tsv" --bench \
    > "$OUT/bench_$side.log" 2>&1 || echo "bench $side failed (see bench_$side.log)" | tee -a "$OUT/summary.txt"
done

# mamba's own tests of the selective scan against the migrated build, if its imports resolve here
if PYTHONPATH="$WORK/migrated" "$PYTHON" -c "import einops, pytest, mamba_ssm.ops.selective_scan_interface" 2>/dev/null; then
  (cd "$WORK/migrated" && PYTHONPATH="$WORK/migrated" "$PYTHON" -m pytest -q tests/ops/test_selective_scan.py \
     -k test_selective_scan) > "$OUT/mamba_tests_migrated.log" 2>&1 \
    && echo "mamba's selective-scan tests (migrated): passed" | tee -a "$OUT/summary.txt" \
    || echo "mamba's selective-scan tests (migrated): FAILED (mamba_tests_migrated.log)" | tee -a "$OUT/summary.txt"
else
  echo "mamba's selective-scan tests: not run (einops / pytest / mamba_ssm imports missing)" | tee -a "$OUT/summary.txt"
fi
exit $status
