#!/usr/bin/env bash
# The main job on the bundled examples: install, analyze the golden mini-library, price the real
# TE build log, and generate the NVRTC migration patch with its report. Outputs go to out/example/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
out=out/example
mkdir -p "$out"

echo; echo "== codemod analyze golden/actlib/input (a TE-shaped mini-library of our own)"
codemod analyze golden/actlib/input --json "$out/analysis.json" --html "$out/analysis.html" -v || true

echo; echo "== codemod impact: the real TE build (sm_90, -j16) with the activation TUs removed"
te=golden/impact/te_sm90_j16
codemod impact "$te/te_sm90_j16.ninja_log" --nvcc-time "$te/te_sm90_j16.nvcc_time.csv" \
  --remove '*/activation/*.cu.o' --json "$out/impact.json" --html "$out/impact.html"

echo; echo "== codemod apply --target golden/actlib/activation.yaml: the migration patch"
codemod apply --target golden/actlib/activation.yaml golden/actlib/input --diff "$out/actlib.patch" \
  --report "$out/actlib.report.md"
cat "$out/actlib.report.md"
echo; echo "-- diffstat"
git apply --stat "$out/actlib.patch"
echo; echo "-- the patch without the generated manifest (full patch: $out/actlib.patch)"
awk '/^diff --git/{skip = ($0 ~ /codemod_manifest\.json/)} !skip' "$out/actlib.patch"
echo; echo "Wrote $out/: analysis.{json,html}, impact.{json,html}, actlib.patch, actlib.report.md"
echo "Next: codemod verify (compile the kernel strings with NVRTC), see docs/verify.md"
