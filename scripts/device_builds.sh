#!/usr/bin/env bash
# Clean, timed builds of the original and the migrated tree of a library side by side on one
# device machine, each pinned to its own half of the physical cores (no core shared between the
# two builds), through `python3 -m codemod.parity build`. The library's configure and build
# commands come from the caller (CONFIGURE_CMD, BUILD_CMD with {src} and {build}); nothing here
# knows how to build a particular library.
#
#   scripts/device_builds.sh start WORK ORIGINAL_SRC MIGRATED_SRC   # returns at once
#   scripts/device_builds.sh start-seq WORK ORIGINAL_SRC MIGRATED_SRC  # one after the other, all cores
#   scripts/device_builds.sh wait WORK SECONDS [OUT]                # progress; copies results to OUT
#   scripts/device_builds.sh cpus WORK                              # prints the two halves' CPU lists
#
# `PIN=0 ... start` does not pin: both builds share every core (builds for parity only, whose
# times are not compared; several WORK folders can then build several libraries at once).
# `start-seq` is for a machine too small for two builds at once: the original, then the migrated
# tree, each with every core (one setsid chain, same logs and status files as `start`).
# `start` runs each build through scripts/device_bg.sh (setsid: it outlives the call that started
# it; log WORK/parity-build-SIDE.log); `wait` polls until both builds have ended (exit status in
# WORK/parity-build-SIDE.rc) or SECONDS have passed,
# printing the steps done per side every 15 s, then copies the build records, ninja logs, nvcc
# --time files and log tails to OUT (default: $OUT). Exit status of `wait`: 0 both builds
# succeeded, 1 a build failed, 3 still running at the deadline.
set -u
mode=${1:?usage: device_builds.sh start|start-seq|wait ...}
work=${2:?WORK}
mkdir -p "$work"
work=$(cd "$work" && pwd)

cpu_sets() {
    # Physical cores (socket, core) split in two halves; each half gets all of its cores' threads.
    python3 - <<'EOF'
import subprocess
rows = [l.split(",") for l in subprocess.run(["lscpu", "-p=CPU,CORE,SOCKET"], capture_output=True,
                                             text=True).stdout.splitlines() if l and not l.startswith("#")]
cores = sorted({(int(s or 0), int(c)) for _, c, s in rows})
half = set(cores[: len(cores) // 2])
a = [cpu for cpu, c, s in rows if (int(s or 0), int(c)) in half]
b = [cpu for cpu, c, s in rows if (int(s or 0), int(c)) not in half]
print(",".join(a), ",".join(b))
EOF
}

case "$mode" in
start)
    orig=${3:?ORIGINAL_SRC}; migr=${4:?MIGRATED_SRC}
    : "${BUILD_CMD:?BUILD_CMD is required (with {src} and {build})}"
    read -r cpus_a cpus_b < <(cpu_sets)
    all=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0)))))')
    if [ "${PIN:-1}" = 0 ]; then cpus_a=$all; cpus_b=$all; fi
    echo "cpus original: $cpus_a"; echo "cpus migrated: $cpus_b"
    lscpu > "$work/lscpu.txt" 2>&1
    for side in original migrated; do
        if [ "$side" = original ]; then src=$orig; cpus=$cpus_a; else src=$migr; cpus=$cpus_b; fi
        echo "$cpus" > "$work/parity-build-$side.cpus"
        bash "$(dirname "$0")/device_bg.sh" start "$work" "parity-build-$side" \
            taskset -c "$cpus" python3 -m codemod.parity build --side "$side" --src "$src" --work "$work" \
            --configure-cmd "${CONFIGURE_CMD:-}" --build-cmd "$BUILD_CMD" --commit "${COMMIT:-}"
    done
    echo "started both builds under $work"
    ;;
wait)
    seconds=${3:?SECONDS}; out=${4:-${OUT:?OUT}}
    mkdir -p "$out"
    end=$((SECONDS + seconds)); status=3
    while :; do
        line="$(date -u +%H:%M:%S)"
        for side in original migrated; do
            step=$(grep -a -o '^\[[0-9]*/[0-9]*\]' "$work/build-$side.log" 2>/dev/null | tail -1)
            [ -f "$work/parity-build-$side.rc" ] && step="$step done rc=$(cat "$work/parity-build-$side.rc")"
            line="$line  $side ${step:-configuring}"
        done
        echo "$line" | tee -a "$out/build_progress.txt"
        if [ -f "$work/parity-build-original.rc" ] && [ -f "$work/parity-build-migrated.rc" ]; then
            status=0
            for side in original migrated; do
                [ "$(cat "$work/parity-build-$side.rc")" = 0 ] || status=1
            done
            break
        fi
        [ $SECONDS -ge $end ] && break
        sleep 15
    done
    for f in "$work"/build-*.json "$work"/*.ninja_log "$work"/*.nvcc_time.csv "$work"/parity-build-* \
             "$work"/lscpu.txt; do
        [ -f "$f" ] && cp "$f" "$out/"
    done
    for side in original migrated; do
        for f in "$work/configure-$side.log" "$work/build-$side.log"; do
            [ -f "$f" ] && tail -c 20000 "$f" > "$out/$(basename "$f" .log).tail.log"
        done
    done
    exit $status
    ;;
cpus)
    cpu_sets
    ;;
start-seq)
    orig=${3:?ORIGINAL_SRC}; migr=${4:?MIGRATED_SRC}
    : "${BUILD_CMD:?BUILD_CMD is required (with {src} and {build})}"
    lscpu > "$work/lscpu.txt" 2>&1
    rm -f "$work"/parity-build-*.rc
    # shellcheck disable=SC2016
    setsid bash -c '
        for side in original migrated; do
            if [ "$side" = original ]; then src=$2; else src=$3; fi
            python3 -m codemod.parity build --side "$side" --src "$src" --work "$1" \
                --configure-cmd "${CONFIGURE_CMD:-}" --build-cmd "$BUILD_CMD" --commit "${COMMIT:-}" \
                > "$1/parity-build-$side.log" 2>&1
            echo $? > "$1/parity-build-$side.rc"
        done' _ "$work" "$orig" "$migr" < /dev/null > /dev/null 2>&1 &
    echo "started the original, then the migrated build under $work"
    ;;
*)
    echo "device_builds.sh: unknown mode $mode (start|start-seq|wait|cpus)" >&2; exit 2 ;;
esac
