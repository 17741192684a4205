#!/usr/bin/env bash
# The main job on the bundled examples: install, analyze the golden mini-library, price the real
# TE build log, and generate the NVRTC migration patch with its report. Each job's full output goes
# to a file in out/example/; the terminal gets one summary per job and where the files are.
# Exit code: analyze may report findings (exit 1) without stopping the example; a failing impact,
# apply or diffstat stops it with that command's exit code, after the end of its output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
out=out/example
mkdir -p "$out"

# run LOG CMD...: CMD's stdout and stderr to LOG; on failure, the end of LOG and exit with its code
run() {
  local log=$1 rc=0
  shift
  "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$log" >&2
    echo "example: '$*' failed (exit $rc); full output: $log" >&2
    exit "$rc"
  fi
}

echo; echo "== codemod analyze golden/actlib/input (a TE-shaped mini-library of our own)"
rc=0
codemod analyze golden/actlib/input --json "$out/analysis.json" --html "$out/analysis.html" -v \
  >"$out/analyze.txt" 2>&1 || rc=$?
echo "   $(tail -n 1 "$out/analyze.txt") (exit $rc)"
echo "   report: $out/analyze.txt; page: $out/analysis.html; JSON: $out/analysis.json"

echo; echo "== codemod impact: the real TE build (sm_90, -j16) with the activation TUs removed"
te=golden/impact/te_sm90_j16
run "$out/impact.txt" codemod impact "$te/te_sm90_j16.ninja_log" --nvcc-time "$te/te_sm90_j16.nvcc_time.csv" \
  --remove '*/activation/*.cu.o' --json "$out/impact.json" --html "$out/impact.html"
grep -E '^predicted wall' "$out/impact.txt" | sed 's/^/   /'
echo "   report: $out/impact.txt; page: $out/impact.html; JSON: $out/impact.json"

echo; echo "== codemod apply --target golden/actlib/activation.yaml: the migration patch"
run "$out/apply.txt" codemod apply --target golden/actlib/activation.yaml golden/actlib/input \
  --diff "$out/actlib.patch" --report "$out/actlib.report.md" --html "$out/apply.html"
echo "   $(grep -E 'files? changed' "$out/apply.txt" | tail -n 1 | cut -d: -f1)"
run "$out/actlib.diffstat.txt" git apply --stat "$out/actlib.patch"
echo "   diffstat:$(tail -n 1 "$out/actlib.diffstat.txt")"
echo "   patch: $out/actlib.patch; report: $out/actlib.report.md; page: $out/apply.html; log: $out/apply.txt"

echo
echo "Full outputs in $out/: analyze.txt, analysis.{json,html}, impact.{txt,json,html}, apply.txt,"
echo "actlib.patch, actlib.report.md, apply.html. Open the .html pages in a browser."
echo "Next: codemod verify (compile the kernel strings with NVRTC), see docs/verify.md;"
echo "on TransformerEngine: docs/te_quickstart.md"
