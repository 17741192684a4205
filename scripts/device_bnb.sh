#!/usr/bin/env bash
# bitsandbytes on a GPU (issue 30): its own CMake build of the checkout as it is (ORIGINAL) and of a
# copy migrated by rules/bnb.yaml (MIGRATED), one after the other on the same machine and timed, for
# its default arch list (COMPUTE_CAPABILITY unset) or ARCHS; then tests/device/bnb_driver.cpp calls
# the C API of each library (blockwise quantize/dequantize over formats and block sizes, 32-bit and
# 8-bit blockwise optimizers) and the output files must be equal byte for byte; then the migrated
# library's legacy build (-DBNB_BUILD_LEGACY_STATIC_KERNELS=ON) with BNB_DISABLE_NVRTC=1 must agree too.
# Written by a session without device time: not run yet.
#
#   PYTHON=/path/to/python-with-codemod-deps scripts/device_bnb.sh BNB_CHECKOUT OUT
#
# BNB_CHECKOUT: bitsandbytes' repository root (95f9af30 was migrated and verified on CPU:
# docs/results/bnb_apply.md); it is copied, never modified. Needs nvcc, cmake, ninja, g++ and a
# CUDA toolkit with cuBLAS (bitsandbytes links it) and NVRTC.
set -euo pipefail
SRC=$(cd "${1:?usage: scripts/device_bnb.sh BNB_CHECKOUT OUT}" && pwd)
OUT=$(mkdir -p "${2:?usage: scripts/device_bnb.sh BNB_CHECKOUT OUT}" && cd "$2" && pwd)
REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d)
ARCH_ARG=()
[ -n "${ARCHS:-}" ] && ARCH_ARG=(-DCOMPUTE_CAPABILITY="$ARCHS")
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}

for side in original migrated legacy; do
  mkdir -p "$WORK/$side" && cp -r "$SRC/CMakeLists.txt" "$SRC/csrc" "$SRC/bitsandbytes" "$WORK/$side/"
done
# the compile database the analysis parses with: the toolkit's cuBLAS headers this time
for side in migrated legacy; do
  "$PYTHON" - "$WORK/$side" "$CUDA_HOME" <<'PY'
import json, pathlib, sys
root, cuda = pathlib.Path(sys.argv[1]), sys.argv[2]
cmd = f"nvcc -std=c++17 -O3 -I{cuda}/include -Icsrc -c "
(root / "compile_commands.json").write_text(json.dumps(
    [{"directory": str(root), "file": str(root / f), "command": cmd + f} for f in ("csrc/kernels.cu", "csrc/ops.cu")]))
PY
  (cd "$REPO" && PYTHONPATH="$REPO" "$PYTHON" -m codemod apply --target rules/bnb.yaml "$WORK/$side" \
     --compile-db "$WORK/$side/compile_commands.json" --write -q) > "$OUT/apply_$side.log" 2>&1
done

build() {  # build SIDE [CMAKE ARGS...]
  local side=$1; shift
  cmake -S "$WORK/$side" -B "$WORK/$side/build" -G Ninja -DCOMPUTE_BACKEND=cuda -DCMAKE_BUILD_TYPE=Release \
    "${ARCH_ARG[@]}" "$@" > "$OUT/configure_$side.log" 2>&1
  local t0; t0=$(date +%s.%N)
  ninja -C "$WORK/$side/build" > "$OUT/build_$side.log" 2>&1
  echo "$side build: $(echo "$(date +%s.%N) - $t0" | bc) s" | tee -a "$OUT/summary.txt"
  cp "$WORK/$side/build/.ninja_log" "$OUT/ninja_log_$side"
}
build original
build migrated
build legacy -DBNB_BUILD_LEGACY_STATIC_KERNELS=ON

g++ -std=c++17 -O2 -I"$CUDA_HOME/include" "$REPO/tests/device/bnb_driver.cpp" -o "$WORK/driver" -ldl \
  -L"$CUDA_HOME/lib64" -lcudart
lib() { ls "$WORK/$1"/bitsandbytes/libbitsandbytes_cuda*.so | head -1; }
"$WORK/driver" "$(lib original)" "$OUT/original.bin" | tee -a "$OUT/summary.txt"
"$WORK/driver" "$(lib migrated)" "$OUT/migrated.bin" | tee -a "$OUT/summary.txt"
BNB_DISABLE_NVRTC=1 "$WORK/driver" "$(lib legacy)" "$OUT/legacy_static.bin" | tee -a "$OUT/summary.txt"
status=0
for f in migrated legacy_static; do
  if cmp "$OUT/original.bin" "$OUT/$f.bin"; then echo "$f: byte-equal to original" | tee -a "$OUT/summary.txt"
  else echo "$f: DIFFERS from original" | tee -a "$OUT/summary.txt"; status=1; fi
done
exit $status
