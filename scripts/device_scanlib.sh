#!/usr/bin/env bash
# golden scanlib on a GPU (issue 30): the library as written (static kernels) against the same tree
# migrated by golden/scanlib/expected/apply.patch (the NVRTC layer nvrtc_layer.create adds, sm of
# the device), and the migrated tree's legacy build with SCANLIB_DISABLE_NVRTC=1. Each links
# tests/device/scanlib_driver.cu, which writes every launcher's output bytes; the three files must
# be equal, and 8 threads racing the first-use compiles must agree. Needs nvcc, python3, g++ and an
# NVRTC (the toolkit's, or NVRTC_LIB=/path/libnvrtc.so.13). Not run by the session that wrote it.
#
#   scripts/device_scanlib.sh OUT          # OUT: results (outputs, logs, summary.txt); exit 0 = equal
set -euo pipefail
OUT=${1:?usage: scripts/device_scanlib.sh OUT}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
ARCH=${ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d .)}
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")}
NVRTC_LIB=${NVRTC_LIB:-$CUDA_HOME/lib64/libnvrtc.so}
mkdir -p "$OUT"

build() {  # build TREE LEGACY LIB
  local tree=$1 legacy=$2 lib=$3 objs=()
  (cd "$tree" && if [ -f src/rtc/scan/string_headers.py ]; then python3 src/rtc/scan/string_headers.py build/strings; fi)
  local flags=(-std=c++17 -O3 -I"$tree/src" -I"$tree/build/strings" -DSCANLIB_BUILD_LEGACY_STATIC_SCAN="$legacy")
  for u in "$tree"/src/*.cu; do
    nvcc -arch=sm_"$ARCH" -Xcompiler -fPIC "${flags[@]}" -c "$u" -o "$u.o"; objs+=("$u.o")
  done
  for u in "$tree"/src/*.cpp "$tree"/src/rtc/*.cpp "$tree"/src/rtc/scan/*.cpp; do
    [ -f "$u" ] || continue
    g++ -fPIC "${flags[@]}" -I"$CUDA_HOME/include" -c "$u" -o "$u.o"; objs+=("$u.o")
  done
  g++ -shared "${objs[@]}" -o "$lib" -Wl,--no-undefined -L"$CUDA_HOME/lib64" "$NVRTC_LIB" -lcudart
  nvcc -arch=sm_"$ARCH" -std=c++17 -I"$tree/src" "$REPO/tests/device/scanlib_driver.cu" "$lib" \
    -Xlinker -rpath="$(dirname "$lib")" -Xlinker -rpath-link="$(dirname "$NVRTC_LIB")" -o "$lib.driver"
}

cp -r "$REPO/golden/scanlib/input" "$WORK/original"
cp -r "$REPO/golden/scanlib/input" "$WORK/migrated"
(cd "$WORK/migrated" && git init -q . && git apply "$REPO/golden/scanlib/expected/apply.patch")
cp -r "$WORK/migrated" "$WORK/legacy"
build "$WORK/original" 0 "$WORK/original/libscan.so" > "$OUT/build_original.log" 2>&1
build "$WORK/migrated" 0 "$WORK/migrated/libscan.so" > "$OUT/build_migrated.log" 2>&1
build "$WORK/legacy" 1 "$WORK/legacy/libscan.so" > "$OUT/build_legacy.log" 2>&1

"$WORK/original/libscan.so.driver" "$OUT/original.bin" | tee "$OUT/summary.txt"
"$WORK/migrated/libscan.so.driver" "$OUT/migrated.bin" 8 | tee -a "$OUT/summary.txt"
SCANLIB_DISABLE_NVRTC=1 "$WORK/legacy/libscan.so.driver" "$OUT/legacy_static.bin" | tee -a "$OUT/summary.txt"
status=0
for f in migrated legacy_static; do
  if cmp "$OUT/original.bin" "$OUT/$f.bin"; then echo "$f: byte-equal to original" | tee -a "$OUT/summary.txt"
  else echo "$f: DIFFERS from original" | tee -a "$OUT/summary.txt"; status=1; fi
done
exit $status
