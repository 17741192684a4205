#!/usr/bin/env bash
# Issue 13, acceptance 1 on one device machine, as one background chain: TE's LayerNorm/RMSNorm
# before its hand NVRTC migration (ORIGINAL), the same tree migrated by rules/normalization.yaml
# (MIGRATED), and TE's own hand migration (HAND). The first call starts the chain, later calls only
# poll it; nothing here knows how to configure or build TE: the caller gives the commands.
#
#   scripts/device_norm.sh start WORK ORIGINAL MIGRATED HAND DRIVER   # returns at once
#   scripts/device_norm.sh pair  WORK MIGRATED HAND                   # only the two builds, at once (A, B)
#   scripts/device_norm.sh poll  WORK SECONDS [OUT]                   # until done or SECONDS passed
#
# ORIGINAL, MIGRATED, HAND: checkout roots (transformer_engine/common, tests/cpp); HAND `-` builds no
# third tree. DRIVER: the folder `codemod parity generate` wrote. `poll` prints a progress line every
# POLL_S s (default 20), then packs WORK/res into OUT/norm_results.tgz (default OUT: $OUT); exit 0
# when the chain ended and every stage succeeded, 1 when it ended with a failure, 3 while it runs.
#
# The machine's cores are split in two halves A and B by physical core (scripts/device_builds.sh);
# each build is `codemod.parity build` (clean, timed, ninja log, nvcc --time). Original and migrated
# build at the same time on equal halves (comparable); then
#   with HAND: B builds the hand tree (same cores, same command: comparable with the migrated build);
#              A builds the tests once the original exists, runs parity, then the tests
#   HAND `-`:  B builds the tests as soon as the migrated library exists and runs them; A runs parity
#              once the original exists
# `pair` builds the migrated and the hand tree at the same time on equal halves, nothing else (the
# second session's share when the first ran HAND `-`: on 8 cores each TE build takes ~13-15 min).
#
# Commands from the caller ({src} {build} {tests} {lib} are substituted):
#   CONFIGURE_CMD, BUILD_CMD   the library's configure and build ({src}, {build})
#   TESTS_CONFIGURE_CMD        TE's tests/cpp configure ({tests}, {build}, {lib}: a folder holding
#                              libtransformer_engine.so, removed after the build so that only
#                              LD_LIBRARY_PATH picks the library a run loads)
#                              `-` (and TESTS_BUILD_CMD `-`): no tests; the chain is the builds and parity
#   TESTS_BUILD_CMD            ({build}); the tests are built once, from ORIGINAL's tests/cpp, and run
#                              against both libraries: they link the library dynamically and include
#                              only files scripts/norm_test_headers.py found equal in the trees
# PREFLIGHT_TARGETS (ninja targets, e.g. "CMakeFiles/transformer_engine.dir/fused_attn/utils.cu.o"): `start`
# first configures every tree and builds these in it, at once and in the foreground (PREFLIGHT_S, 900 s
# at most), and starts nothing when one fails: a staging error (an include folder of the wrong version)
# shows in the first minutes of the call, not half way through the long builds. Its log tails:
# WORK/preflight-<side>.log.
# Optional: PARITY_LABEL (te_norm: the parity report's label; its files res/parity_<label less te_>.json/.md),
# TESTS_BIN (operator/test_operator), TESTS_FILTER (*NormTestSuite*), TESTS_SHARDS (8, gtest
# shards run at once per library), PARITY_SHARDS (16), PARITY_RUN (python3 -m codemod.parity run),
# PY (python3), COMMIT (codemod commit to record), POLL_S, CHAIN_CPUS_A / CHAIN_CPUS_B (override the
# halves).
set -u
mode=${1:?usage: device_norm.sh start|pair|poll WORK ...}
work=${2:?WORK}
mkdir -p "$work"
work=$(cd "$work" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
res=$work/res
poll_s=${POLL_S:-20}
py=${PY:-python3}

stage() { echo "$(date -u +%T) $*" >> "$res/stages"; }

tests_wanted() { [ "${TESTS_CONFIGURE_CMD:-}" != - ]; }  # TESTS_CONFIGURE_CMD `-`: no tests

bg() {  # bg NAME COMMAND...: in the background, log WORK/NAME.log, exit status WORK/NAME.rc
    local name=$1; shift
    rm -f "$work/$name.rc"
    ( "$@" > "$work/$name.log" 2>&1; echo $? > "$work/$name.rc" ) &
}

wait_rc() {  # wait_rc NAME: until NAME has ended; prints its exit status
    while [ ! -f "$work/$1.rc" ]; do sleep "$poll_s"; done
    cat "$work/$1.rc"
}

lib_dir() {  # the folder of a build's libtransformer_engine.so (empty when none)
    local so
    so=$(find "$work/build-$1" -maxdepth 3 -name 'libtransformer_engine.so' 2>/dev/null | head -1)
    [ -n "$so" ] && dirname "$so"
}

build_side() {  # build_side SIDE SRC CPUS
    echo "$3" > "$work/parity-build-$1.cpus"
    taskset -c "$3" "$py" -m codemod.parity build --side "$1" --src "$2/transformer_engine/common" --work "$work" \
        --configure-cmd "${CONFIGURE_CMD:-}" --build-cmd "$BUILD_CMD" --commit "${COMMIT:-}"
}

run_tests() {  # run_tests SIDE CPUS: the filtered suites against SIDE's library, TESTS_SHARDS at once
    local side=$1 cpus=$2 lib bin n i start rc=0
    lib=$(lib_dir "$side")
    bin="$work/tests-build/${TESTS_BIN:-operator/test_operator}"
    n=${TESTS_SHARDS:-8}
    [ -n "$lib" ] || { echo "no library in $work/build-$side"; return 2; }
    # The library the binary loads must be this side's: checked, not assumed.
    LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" ldd "$bin" > "$res/tests-$side.ldd" 2>&1
    if ! grep -q "libtransformer_engine.so => $lib/libtransformer_engine.so" "$res/tests-$side.ldd"; then
        echo "the test binary does not load $lib/libtransformer_engine.so"; cat "$res/tests-$side.ldd"; return 2
    fi
    export NVTE_RTC_CACHE_DIR="$work/rtc-cache-tests-$side"   # fresh; shared by the shards
    rm -rf "$NVTE_RTC_CACHE_DIR"
    omp=$(( $(taskset -c "$cpus" nproc) / n )); [ "$omp" -ge 1 ] || omp=1
    start=$(date +%s)
    local pids=()
    for i in $(seq 0 $((n - 1))); do
        GTEST_TOTAL_SHARDS=$n GTEST_SHARD_INDEX=$i OMP_NUM_THREADS=$omp \
            LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" taskset -c "$cpus" "$bin" --gtest_filter="${TESTS_FILTER:-*NormTestSuite*}" \
            --gtest_output="xml:$res/tests-$side-$i.xml" > "$work/tests-$side-$i.log" 2>&1 &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i" || rc=1; done
    echo "$side shards=$n rc=$rc wall_s=$(( $(date +%s) - start ))" >> "$res/tests.status"
    for i in $(seq 0 $((n - 1))); do tail -c 300000 "$work/tests-$side-$i.log" > "$res/tests-$side-$i.log"; done
    return $rc
}

start_tests_build() {  # start_tests_build SIDE CPUS ORIGINAL: TE's tests/cpp, linked against SIDE's library
    local lib tests subst_c subst_b
    lib=$(lib_dir "$1")
    rm -rf "$work/tests-lib" "$work/tests-build"; mkdir -p "$work/tests-lib"
    ln -s "$lib/libtransformer_engine.so" "$work/tests-lib/libtransformer_engine.so"
    tests=$(cd "$3/tests/cpp" && pwd)
    subst_c=${TESTS_CONFIGURE_CMD//\{tests\}/$tests}
    subst_c=${subst_c//\{build\}/$work/tests-build}; subst_c=${subst_c//\{lib\}/$work/tests-lib}
    subst_b=${TESTS_BUILD_CMD//\{build\}/$work/tests-build}
    bg tests-build taskset -c "$2" bash -c 'start=$(date +%s); eval "$1" && s1=$(date +%s) && eval "$2" &&
        echo "configure_s=$((s1 - start)) build_s=$(( $(date +%s) - s1 ))"' _ "$subst_c" "$subst_b"
    stage "tests build started, linked against the $1 library ($2)"
}

chain() {  # chain ORIGINAL MIGRATED HAND DRIVER
    local orig=$1 migr=$2 hand=$3 driver=$4 a b tcpus status=0 trc side d label=${PARITY_LABEL:-te_norm}
    a=${CHAIN_CPUS_A:-}; b=${CHAIN_CPUS_B:-}
    if [ -z "$a" ] || [ -z "$b" ]; then read -r a b < <(bash "$here/device_builds.sh" cpus "$work"); fi
    echo "A $a" > "$res/cpus.txt"; echo "B $b" >> "$res/cpus.txt"
    environment
    stage "builds original(A) migrated(B)"
    bg parity-build-original build_side original "$orig" "$a"
    bg parity-build-migrated build_side migrated "$migr" "$b"
    stage "migrated built rc=$(wait_rc parity-build-migrated)"
    # Half B next: the hand tree's build, or (without one) the tests build against the migrated library.
    tcpus=$a
    if [ "$hand" != - ]; then
        bg parity-build-hand build_side hand "$hand" "$b"
        stage "hand build started (B)"
    elif tests_wanted && [ -n "$(lib_dir migrated)" ]; then
        tcpus=$b
        start_tests_build migrated "$b" "$orig"
    fi
    stage "original built rc=$(wait_rc parity-build-original)"
    if tests_wanted && [ ! -f "$work/tests-build.log" ] && [ -n "$(lib_dir original)" ]; then
        tcpus=$a
        start_tests_build original "$a" "$orig"
    fi
    if [ -n "$(lib_dir original)" ] && [ -n "$(lib_dir migrated)" ]; then
        stage "parity started (A)"
        # shellcheck disable=SC2086
        bg parity env NVTE_RTC_CACHE_DIR="$work/rtc-cache-parity" taskset -c "$a" ${PARITY_RUN:-$py -m codemod.parity run} \
            --original "$orig/transformer_engine/common" --migrated "$migr/transformer_engine/common" \
            --build-cmd "$BUILD_CMD" --driver "$driver" --work "$work" --skip-build --shards "${PARITY_SHARDS:-16}" \
            --json "$res/parity_${label#te_}.json" --markdown "$res/parity_${label#te_}.md" --commit "${COMMIT:-}" \
            --label "$label"
    else
        stage "no parity: a library is missing"; status=1; echo 2 > "$work/parity.rc"
    fi
    if [ -f "$work/tests-build.log" ]; then
        trc=$(wait_rc tests-build)
        stage "tests built rc=$trc $(tail -1 "$work/tests-build.log" | grep -o 'configure_s=.*')"
        rm -rf "$work/tests-lib"
        if [ "$trc" = 0 ]; then
            for side in original migrated; do
                [ -n "$(lib_dir "$side")" ] || { stage "tests $side: no library"; status=1; continue; }
                stage "tests $side started ($tcpus)"
                ( run_tests "$side" "$tcpus" ) > "$work/tests-run-$side.log" 2>&1 || status=1
                stage "tests $side ended: $(grep "^$side " "$res/tests.status" 2>/dev/null | tail -1)"
            done
        else
            status=1
        fi
    elif ! tests_wanted; then
        stage "no tests (TESTS_CONFIGURE_CMD -)"
    else
        stage "no tests build: a library is missing"; status=1
    fi
    stage "parity ended rc=$(wait_rc parity)"
    [ "$(cat "$work/parity.rc")" = 0 ] || status=1
    [ "$hand" != - ] && stage "hand built rc=$(wait_rc parity-build-hand)"
    for side in original migrated hand; do
        [ "$side" = hand ] && [ "$hand" = - ] && continue
        [ "$(cat "$work/parity-build-$side.rc")" = 0 ] || status=1
        d=$(lib_dir "$side")
        [ -n "$d" ] && echo "$side $(stat -c %s "$d/libtransformer_engine.so")" >> "$res/so_size.txt"
    done
    stage "done status=$status"
    echo "$status" > "$work/chain.rc"
}

pair() {  # pair MIGRATED HAND: rule and hand built at the same time on equal halves, nothing else
    local a b status=0 side d
    a=${CHAIN_CPUS_A:-}; b=${CHAIN_CPUS_B:-}
    if [ -z "$a" ] || [ -z "$b" ]; then read -r a b < <(bash "$here/device_builds.sh" cpus "$work"); fi
    echo "A $a" > "$res/cpus.txt"; echo "B $b" >> "$res/cpus.txt"
    environment
    stage "builds migrated(A) hand(B)"
    bg parity-build-migrated build_side migrated "$1" "$a"
    bg parity-build-hand build_side hand "$2" "$b"
    for side in migrated hand; do
        stage "$side built rc=$(wait_rc "parity-build-$side")"
        [ "$(cat "$work/parity-build-$side.rc")" = 0 ] || status=1
        d=$(lib_dir "$side")
        [ -n "$d" ] && echo "$side $(stat -c %s "$d/libtransformer_engine.so")" >> "$res/so_size.txt"
    done
    stage "done status=$status"
    echo "$status" > "$work/chain.rc"
}

environment() {
    {
        nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
        nvcc --version 2>&1 | tail -2; ninja --version 2>&1; cmake --version 2>&1 | head -1
        echo "nproc $(nproc)"; date -u +%FT%TZ
    } > "$res/environment.txt"
    lscpu > "$res/lscpu.txt" 2>&1
}

collect() {  # what poll packs: build records, logs (tails), parity and tests outputs
    local f side
    for f in "$work"/build-*.json "$work"/*.ninja_log "$work"/parity-build-*.rc "$work"/parity-build-*.cpus \
             "$work"/*.rc; do
        [ -f "$f" ] && cp "$f" "$res/"
    done
    for f in "$work"/*.nvcc_time.csv; do [ -f "$f" ] && gzip -c "$f" > "$res/$(basename "$f").gz"; done
    for side in original migrated hand; do
        for f in "$work/configure-$side.log" "$work/build-$side.log" "$work/parity-build-$side.log"; do
            [ -f "$f" ] && tail -c 30000 "$f" > "$res/$(basename "$f" .log).tail.log"
        done
    done
    for f in parity tests-build tests-run-original tests-run-migrated; do
        [ -f "$work/$f.log" ] && tail -c 300000 "$work/$f.log" > "$res/$f.log"
    done
}

preflight() {  # preflight TREE...: configure each and build PREFLIGHT_TARGETS in it; 1 if one fails
    local t i=0 dir c b rc=0 side
    for t in "$@"; do
        [ "$t" = - ] && continue
        i=$((i + 1)); side=$(basename "$t"); dir="$work/preflight-$i"
        rm -rf "$dir"
        c=${CONFIGURE_CMD//\{src\}/$t/transformer_engine/common}; c=${c//\{build\}/$dir}
        b=${BUILD_CMD//\{src\}/$t/transformer_engine/common}; b=${b//\{build\}/$dir}
        # shellcheck disable=SC2086
        if ! timeout "${PREFLIGHT_S:-900}" bash -c "$c && $b $PREFLIGHT_TARGETS" > "$work/preflight-$side.log" 2>&1; then
            echo "device_norm.sh: preflight failed in $t (configure, or one of: $PREFLIGHT_TARGETS); nothing started" >&2
            tail -40 "$work/preflight-$side.log" >&2
            rc=1
        fi
        rm -rf "$dir"
    done
    return $rc
}

case "$mode" in
start)
    orig=${3:?ORIGINAL}; migr=${4:?MIGRATED}; hand=${5:?HAND}; driver=${6:?DRIVER}
    : "${BUILD_CMD:?BUILD_CMD is required (with {src} and {build})}"
    : "${TESTS_CONFIGURE_CMD:?TESTS_CONFIGURE_CMD is required (with {tests}, {build}, {lib}; - for no tests)}"
    : "${TESTS_BUILD_CMD:?TESTS_BUILD_CMD is required (with {build})}"
    for t in "$orig" "$migr" "$hand"; do
        [ "$t" = - ] && continue
        [ -d "$t/transformer_engine/common" ] || { echo "device_norm.sh: $t has no transformer_engine/common" >&2; exit 2; }
    done
    [ -f "$driver/driver.cu" ] || { echo "device_norm.sh: $driver has no driver.cu" >&2; exit 2; }
    abs() { (cd "$1" && pwd); }
    if [ -n "${PREFLIGHT_TARGETS:-}" ]; then
        preflight "$(abs "$orig")" "$(abs "$migr")" "$([ "$hand" = - ] && echo - || abs "$hand")" || exit 1
        echo "device_norm.sh: preflight passed ($PREFLIGHT_TARGETS)"
    fi
    rm -rf "$res" "$work"/*.rc "$work/tests-build.log"; mkdir -p "$res"
    hand_abs=-; [ "$hand" = - ] || hand_abs=$(abs "$hand")
    setsid bash "$0" chain "$work" "$(abs "$orig")" "$(abs "$migr")" "$hand_abs" "$(abs "$driver")" \
        < /dev/null > "$work/chain.log" 2>&1 &
    echo "device_norm.sh: chain started under $work (log $work/chain.log)"
    ;;
chain)
    mkdir -p "$res"
    chain "$3" "$4" "$5" "$6"
    ;;
pair)
    migr=${3:?MIGRATED}; hand=${4:?HAND}
    : "${BUILD_CMD:?BUILD_CMD is required (with {src} and {build})}"
    rm -rf "$res" "$work"/*.rc; mkdir -p "$res"
    setsid bash "$0" pair-run "$work" "$(cd "$migr" && pwd)" "$(cd "$hand" && pwd)" < /dev/null > "$work/chain.log" 2>&1 &
    echo "device_norm.sh: migrated and hand builds started under $work"
    ;;
pair-run)
    mkdir -p "$res"
    pair "$3" "$4"
    ;;
poll)
    seconds=${3:?SECONDS}; out=${4:-${OUT:?OUT}}
    mkdir -p "$out" "$res"
    end=$((SECONDS + seconds))
    while :; do
        line="$(date -u +%T) | $(tail -1 "$res/stages" 2>/dev/null)"
        for side in original migrated hand; do
            step=$(grep -a -o '^\[[0-9]*/[0-9]*\]' "$work/build-$side.log" 2>/dev/null | tail -1)
            [ -f "$work/parity-build-$side.rc" ] && step="rc=$(cat "$work/parity-build-$side.rc")"
            line="$line | $side ${step:--}"
        done
        [ -f "$work/parity.log" ] && line="$line | parity: $(tail -c 200 "$work/parity.log" | tr '\n\r' '  ' | tail -c 80)"
        echo "$line" | tee -a "$res/progress.txt"
        [ -f "$work/chain.rc" ] && break
        [ $SECONDS -ge $end ] && break
        sleep "$poll_s"
    done
    collect
    cat "$res/stages" 2>/dev/null
    tar czf "$out/norm_results.tgz" -C "$work" res
    echo "device_norm.sh: $(du -k "$out/norm_results.tgz" | cut -f1) KiB in $out/norm_results.tgz"
    [ -f "$work/chain.rc" ] || exit 3
    [ "$(cat "$work/chain.rc")" = 0 ] || exit 1
    ;;
*)
    echo "device_norm.sh: unknown mode $mode (start|pair|poll)" >&2; exit 2 ;;
esac
