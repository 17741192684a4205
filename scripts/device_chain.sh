#!/usr/bin/env bash
# One device session's whole chain, in the background, polled by later calls (each at most 600 s):
# the migrated library alone (timed), the original beside the tests' build, the layer and operator
# tests on the migrated library, then parity of each driver. Nothing here knows how to build a
# library: every command comes from CHAIN_ENV, a file the caller carries (kept out of the repo).
#
#   scripts/device_chain.sh start CHAIN_ENV SECONDS   # untar, start, wait up to SECONDS, collect
#   scripts/device_chain.sh wait CHAIN_ENV SECONDS    # a later call: wait, collect
#
# CHAIN_ENV (bash) sets: W (scratch folder), ORIG_TGZ, MIGR_TGZ (trees; LIB is the library root
# inside them), EXTRA_TGZ (optional, untarred into $W/extra), COMMIT, CONFIGURE_CMD and BUILD_CMD
# (with {src}, {build}; BUILD_CMD also {jobs}), TESTS_SRC (inside the migrated tree),
# TESTS_CONFIGURE_CMD (with {src}, {build}, {lib}: the migrated build), UTIL_TEST (binary inside
# the tests' build), CTEST_REGEX, OPS_TEST (binary) and OPS_SHARDS, DRIVERS ("NAME=FOLDER ...",
# folders written by `codemod parity generate`). Optional: ALONE_CONFIGURE_CMD (and ALONE_SIDE) builds
# the migrated tree once more with that configure, alone and timed, before anything else (e.g.
# another arch), its build folder removed after; ORIGINAL=0 builds no original and runs no parity:
# the migrated build alone, its tests, then ALONE_CONFIGURE_CMD's build (last, not first);
# MIGRATED_ALONE=0 builds the migrated tree beside the original (MIGR_JOBS; MIGR_NICE, default
# "nice -n 10") instead of alone first; OPS_FILTER a --gtest_filter for the operator tests (default:
# all); ORIG_JOBS the original's jobs; parity starts once both builds are done, beside the tests
# (TESTS_JOBS, default 4; TESTS_TARGETS limits the tests' build); an empty CTEST_REGEX or OPS_TEST skips that step. Results: $OUT/res.tgz and $OUT/stages.txt after
# every call (a call can be the last: the machine is given back 30 s after it). The chain runs and
# is waited for through scripts/device_bg.sh (its log $W/chain.log, status $W/chain.rc; POLL).
set -u
mode=${1:?start|wait}; envf=$(cd "$(dirname "${2:?CHAIN_ENV}")" && pwd)/$(basename "$2"); secs=${3:-}
R=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC1090
source "$envf"
st() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$W/stages.txt"; }

chain() {
  export PYTHONPATH=$R
  cd "$W" || exit 1
  PY=$(command -v python3)
  { date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    nvcc --version | tail -2; ninja --version; cmake --version | head -1; nproc; $PY --version; id; } > env.txt 2>&1
  $PY -c 'import codemod.parity.runner' >> env.txt 2>&1 || { st "codemod.parity does not import"; return 1; }
  pbuild() {  # side tree jobs [configure]; NICE: a prefix such as "nice -n 10"
    ${NICE:-} $PY -m codemod.parity build --side "$1" --src "$W/$2/$LIB" --work "$W/scratch" --configure-cmd "${4:-$CONFIGURE_CMD}" \
        --build-cmd "${BUILD_CMD//\{jobs\}/$3}" --commit "$COMMIT" > "pbuild-$1.log" 2>&1
  }
  timed() {  # pbuild's arguments: the build, its stage line and its status in SIDE.rc
    local t0=$SECONDS rc; pbuild "$@"; rc=$?; st "build $1 rc=$rc in $((SECONDS - t0)) s"; echo $rc > "$1.rc"; return $rc
  }
  tests() {  # against the migrated build: configure, build, util tests, ctest, operator tests
    t0=$SECONDS; cmd=${TESTS_CONFIGURE_CMD//\{src\}/$W/migr/$TESTS_SRC}; cmd=${cmd//\{build\}/$W/bt}
    # shellcheck disable=SC2086
    nice -n 10 bash -c "${cmd//\{lib\}/$W/scratch/build-migrated}" > tests-configure.log 2>&1 &&
      nice -n 10 ninja -C "$W/bt" -j"${TESTS_JOBS:-4}" ${TESTS_TARGETS:-} > tests-build.log 2>&1
    rc=$?; st "tests build rc=$rc in $((SECONDS - t0)) s"
    [ $rc = 0 ] || return 1
    ( cd "$(dirname "$W/bt/$UTIL_TEST")" && "$W/bt/$UTIL_TEST" --gtest_output=xml:"$W/util.xml" > "$W/util.log" 2>&1 )
    st "util tests rc=$? $(grep -a -E '^\[  (PASSED|FAILED) ' util.log | tr '\n' ' ')"
    if [ -n "${CTEST_REGEX:-}" ]; then
      ( cd "$W/bt" && ctest -R "$CTEST_REGEX" --output-on-failure > "$W/ctest.log" 2>&1 )
      st "ctest '$CTEST_REGEX' rc=$? $(grep -a 'tests passed' ctest.log)"
    fi
    [ -n "${OPS_TEST:-}" ] || return 0
    t1=$SECONDS
    for i in $(seq 0 $((OPS_SHARDS - 1))); do
      ( cd "$(dirname "$W/bt/$OPS_TEST")" && OMP_NUM_THREADS=2 GTEST_TOTAL_SHARDS=$OPS_SHARDS GTEST_SHARD_INDEX=$i \
          nice -n 5 "$W/bt/$OPS_TEST" ${OPS_FILTER:+--gtest_filter="$OPS_FILTER"} --gtest_output=xml:"$W/ops-$i.xml" > "$W/ops-$i.log" 2>&1; echo $? > "$W/ops-$i.rc" ) &
    done
    wait
    st "operator tests ($OPS_SHARDS shards) in $((SECONDS - t1)) s: rc $(echo $(cat ops-*.rc))"
  }
  alone() {
    side=${ALONE_SIDE:-migrated-alone}
    st "$1 $side build alone (-j$(nproc))"
    timed "$side" migr "$(nproc)" "$ALONE_CONFIGURE_CMD"
    rm -rf "$W/scratch/build-$side"
  }
  if [ "${ORIGINAL:-1}" = 0 ]; then   # no original, no parity: the migrated build, its tests, then ALONE
    st "1 migrated build alone (-j$(nproc))"
    timed migrated migr "$(nproc)" || return 1
    st "2 the tests' build alone"
    tests
    if [ -n "${ALONE_CONFIGURE_CMD:-}" ]; then alone 3; fi
    return 0
  fi
  if [ -n "${ALONE_CONFIGURE_CMD:-}" ]; then alone 0; fi
  if [ "${MIGRATED_ALONE:-1}" = 1 ]; then
    st "1 migrated build alone (-j$(nproc))"
    timed migrated migr "$(nproc)" || return 1
    st "2 original build beside the tests' build"
    timed original orig "${ORIG_JOBS:-$(( $(nproc) - 2 ))}" & opid=$!
    ( tests; touch tests.done ) &
  else
    jobs=${MIGR_JOBS:-8}
    st "1 original build (-j${ORIG_JOBS:-$(nproc)}) beside the migrated build (${MIGR_NICE-nice -n 10} -j$jobs), then the tests' build"
    timed original orig "${ORIG_JOBS:-$(nproc)}" & opid=$!
    ( NICE="${MIGR_NICE-nice -n 10}" timed migrated migr "$jobs" && tests; touch tests.done ) &
  fi
  wait $opid   # parity as soon as both builds are done, beside the tests
  while [ ! -f migrated.rc ]; do sleep 5; done
  if [ "$(cat original.rc)" = 0 ] && [ "$(cat migrated.rc)" = 0 ]; then   # parity needs both builds
    for d in $DRIVERS; do
      name=${d%%=*}; mkdir -p "work_$name"
      ln -sfn "$W/scratch/build-original" "work_$name/build-original"; ln -sfn "$W/scratch/build-migrated" "work_$name/build-migrated"
      t0=$SECONDS
      $PY -m codemod.parity run --original "$W/orig/$LIB" --migrated "$W/migr/$LIB" --build-cmd "ninja -C {build}" \
        --driver "$W/extra/${d#*=}" --work "work_$name" --skip-build --shards 16 --no-timings --commit "$COMMIT" \
        --label "$name" --json "parity-$name.json" --markdown "parity-$name.md" > "parity-$name.log" 2>&1
      st "parity $name rc=$? in $((SECONDS - t0)) s: $(grep -a -o '"all_equal": [a-z]*' "parity-$name.json" 2>/dev/null)"
    done
  fi
  while [ ! -f tests.done ]; do sleep 5; done
}

case "$mode" in
run) chain; rc=$?; st "chain done"; exit $rc ;;   # the background chain itself (device_bg.sh start)
start)
  rm -rf "$W"; mkdir -p "$W/orig" "$W/migr" "$W/extra"
  tar xzf "$ORIG_TGZ" -C "$W/orig"; tar xzf "$MIGR_TGZ" -C "$W/migr"
  [ -n "${EXTRA_TGZ:-}" ] && tar xzf "$EXTRA_TGZ" -C "$W/extra"
  bash "$R/scripts/device_bg.sh" start "$W" chain bash "$R/scripts/device_chain.sh" run "$envf" ;;
wait) ;;
*) echo "device_chain.sh: unknown mode $mode (start|wait)" >&2; exit 2 ;;
esac
bash "$R/scripts/device_bg.sh" wait "$W" "${secs:?SECONDS}" chain
cd "$W" && mkdir -p res && cp -f stages.txt env.txt ./*.xml ./*.log parity-*.json parity-*.md res/ 2>/dev/null
for f in ops-*.log tests-build.log scratch/build-*.log; do [ -f "$f" ] && tail -c 20000 "$f" > "res/$(basename "$f").tail"; done
cp -f scratch/*.ninja_log scratch/*.nvcc_time.csv res/ 2>/dev/null
for f in scratch/build-*.json; do   # no build recipe in results: parity run's redaction
  [ -f "$f" ] && PYTHONPATH=$R python3 -c 'import json, sys; from codemod.parity.runner import without_commands
json.dump(without_commands(json.load(open(sys.argv[1]))), open(sys.argv[2], "w"), indent=1)' "$f" "res/$(basename "$f")"
done
for d in work_*; do for f in "$d"/driver-*.log "$d"/parity-*-*.log; do [ -f "$f" ] && tail -c 4000 "$f" > "res/$d.$(basename "$f")"; done; done
tar czf "$OUT/res.tgz" res && cp stages.txt "$OUT/stages.txt"; cat stages.txt
[ -f chain.rc ] && echo "CHAIN DONE (rc $(cat chain.rc))"
exit 0
