#!/usr/bin/env bash
# Issue 13, acceptance 1 on a device machine: TE's LayerNorm/RMSNorm before its hand NVRTC migration
# (the original tree) against the same tree migrated by rules/normalization.yaml. Each mode fits in
# one device call (long steps run in the background through scripts/device_bg.sh and are collected
# by a later `wait`); nothing here knows how to configure or build TE: the caller gives
# CONFIGURE_CMD and BUILD_CMD (with {src} and {build}), as for scripts/device_builds.sh.
#
#   scripts/device_norm.sh builds WORK ORIGINAL_SRC MIGRATED_SRC [SECONDS]  # clean timed builds, one after the other
#   scripts/device_norm.sh wait   WORK SECONDS                              # collect the builds
#   scripts/device_norm.sh parity WORK ORIGINAL_SRC MIGRATED_SRC DRIVER [SECONDS]  # byte parity (background)
#   scripts/device_norm.sh ctests WORK ORIGINAL_SRC MIGRATED_SRC [SECONDS]  # TE's C++ normalization tests (background)
#   scripts/device_norm.sh collect WORK SECONDS NAME...                     # wait for parity / ctests, copy results
#
# ORIGINAL_SRC / MIGRATED_SRC: the two trees' transformer_engine/common. Results go to $OUT
# (norm_builds/, parity_norm.{json,md}, ctest-SIDE.{log,xml}, norm_device.json).
#
# ctests builds TE's tests/cpp as TE documents it (qa/L0_cppunittest/test.sh: `cmake -GNinja
# -Bbuild .`, `cmake --build build`, `ctest --test-dir build`), in each tree, against that tree's
# libtransformer_engine.so (TE_LIB_PATH = WORK/build-SIDE), only the test_operator target, and runs
# the normalization suites (NormTestSuite, MxNormTestSuite) with the binary's --gtest_filter. GTEST_DIR
# (default .device/googletest) is linked as the tree's 3rdparty/googletest when that is empty.
set -u
mode=${1:?usage: device_norm.sh builds|wait|parity|ctests|collect WORK ...}
work=${2:?WORK}
mkdir -p "$work"
work=$(cd "$work" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$work/out}
mkdir -p "$out"

case "$mode" in
builds)
    orig=${3:?ORIGINAL_SRC}; migr=${4:?MIGRATED_SRC}; seconds=${5:-540}
    # CUTLASS (TE's 3rdparty submodule, not in the bundles): CUTLASS_DIR is linked in when missing.
    for src in "$orig" "$migr"; do
        repo=$(cd "$src/../.." && pwd)
        if [ ! -e "$repo/3rdparty/cutlass/include" ] && [ -n "${CUTLASS_DIR:-}" ]; then
            mkdir -p "$repo/3rdparty"; rm -rf "$repo/3rdparty/cutlass"; ln -sfn "$CUTLASS_DIR" "$repo/3rdparty/cutlass"
        fi
    done
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$work/gpu.txt" 2>&1
    nvcc --version | tail -2 >> "$work/gpu.txt"
    bash "$here/device_builds.sh" start-seq "$work" "$orig" "$migr"
    sleep 5
    bash "$here/device_builds.sh" wait "$work" "$seconds" "$out/norm_builds"
    rc=$?
    cp "$work/gpu.txt" "$out/norm_builds/" 2>/dev/null
    exit $rc
    ;;
wait)
    bash "$here/device_builds.sh" wait "$work" "${3:?SECONDS}" "$out/norm_builds"
    rc=$?
    # .so sizes of both builds (the side by side with TE's hand migration wants them)
    for side in original migrated; do
        so=$(find "$work/build-$side" -maxdepth 2 -name 'libtransformer_engine.so' 2>/dev/null | head -1)
        [ -n "$so" ] && echo "$side $(stat -c %s "$so")" >> "$out/norm_builds/so_size.txt"
    done
    exit $rc
    ;;
parity)
    orig=${3:?ORIGINAL_SRC}; migr=${4:?MIGRATED_SRC}; driver=${5:?DRIVER}; seconds=${6:-500}
    : "${BUILD_CMD:?BUILD_CMD is required (with {src} and {build})}"
    bash "$here/device_bg.sh" start "$work" parity python3 -m codemod.parity run --original "$orig" \
        --migrated "$migr" --build-cmd "$BUILD_CMD" --driver "$driver" --work "$work" --skip-build \
        --shards "${SHARDS:-16}" --no-timings --json "$work/parity_norm.json" --markdown "$work/parity_norm.md"
    exec bash "$0" collect "$work" "$seconds" parity
    ;;
ctests)
    orig=${3:?ORIGINAL_SRC}; migr=${4:?MIGRATED_SRC}; seconds=${5:-540}
    gtest=${GTEST_DIR:-$PWD/.device/googletest}
    for side in original migrated; do
        if [ "$side" = original ]; then src=$orig; else src=$migr; fi
        repo=$(cd "$src/../.." && pwd)
        if [ ! -e "$repo/3rdparty/googletest/CMakeLists.txt" ]; then
            [ -d "$gtest" ] || { echo "device_norm.sh: no googletest (set GTEST_DIR)" >&2; exit 2; }
            rm -rf "$repo/3rdparty/googletest"; ln -sfn "$gtest" "$repo/3rdparty/googletest"
        fi
    done
    # One side after the other (each with every core), in the background. CTEST_BUILD=once builds
    # the tests in the original tree only and runs that binary against both libraries (it loads
    # libtransformer_engine.so from LD_LIBRARY_PATH; `ldd` is recorded).
    # shellcheck disable=SC2016
    bash "$here/device_bg.sh" start "$work" ctests bash -c '
        set -u; work=$1; status=0
        for side in original migrated; do
            if [ "$side" = original ]; then src=$2; else src=$3; fi
            tests=$(cd "$src/../../tests/cpp" && pwd); build="$work/ctest-build-$side"
            log="$work/ctest-$side.log"; : > "$log"
            if [ "${CTEST_BUILD:-each}" = once ] && [ "$side" = migrated ]; then
                build="$work/ctest-build-original"
            else
                rm -rf "$build"; start=$(date +%s)
                { cmake -GNinja -B"$build" -S "$tests" -DTE_LIB_PATH="$work/build-$side" \
                      -DCMAKE_CUDA_ARCHITECTURES="${ARCHS:-90}" &&
                  cmake --build "$build" --target test_operator; } >> "$log" 2>&1 ||
                  { echo "$side rc=build-failed" >> "$work/ctests.status"; status=1; continue; }
                echo "tests built in $(( $(date +%s) - start )) s" >> "$log"
            fi
            bin="$build/operator/test_operator"
            LD_LIBRARY_PATH="$work/build-$side:${LD_LIBRARY_PATH:-}" ldd "$bin" | grep transformer_engine >> "$log"
            # The normalization suites of test_operator (ctest -R NormTestSuite runs the same tests
            # one process each, so every process compiles its NVRTC variants again: minutes more).
            start=$(date +%s)
            LD_LIBRARY_PATH="$work/build-$side:${LD_LIBRARY_PATH:-}" OMP_NUM_THREADS=4 \
                "$bin" --gtest_filter="*NormTestSuite*" --gtest_output="xml:$work/ctest-$side.xml" >> "$log" 2>&1
            rc=$?; echo "$side rc=$rc $(( $(date +%s) - start )) s" >> "$work/ctests.status"
            [ $rc = 0 ] || status=1
        done
        exit $status' _ "$work" "$orig" "$migr"
    exec bash "$0" collect "$work" "$seconds" ctests
    ;;
collect)
    seconds=${3:?SECONDS}; shift 3
    bash "$here/device_bg.sh" wait "$work" "$seconds" "$@"
    rc=$?
    for f in parity_norm.json parity_norm.md parity.log ctest-original.log ctest-migrated.log \
             ctest-original.xml ctest-migrated.xml ctests.status ctests.log gpu.txt; do
        [ -f "$work/$f" ] && tail -c 2000000 "$work/$f" > "$out/$f"
    done
    exit $rc
    ;;
*)
    echo "device_norm.sh: unknown mode $mode (builds|wait|parity|ctests|collect)" >&2; exit 2 ;;
esac
