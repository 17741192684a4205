#!/usr/bin/env bash
# Stages a TE source tree for the device runs from fetched mirrors (nothing of TE is committed; the
# tree goes to a git-ignored folder): the library at COMMIT, and the CUTLASS headers at the commit
# TE's 3rdparty/cutlass submodule pins (include/ and tools/util/include/, what TE's CMake reads; the
# whole CUTLASS tree does not archive from a mirror without its LFS media).
#
#   scripts/stage_te.sh TE_MIRROR COMMIT CUTLASS_MIRROR OUT_DIR
#
# TE_MIRROR, CUTLASS_MIRROR: git directories (mirrors of the two GitHub repositories).
# OUT_DIR must not exist. The cuDNN frontend headers are not staged here: take them from the PyPI
# wheel `nvidia-cudnn-frontend` (its include/); the GitHub mirror's release can be older than a TE
# commit needs (1.23.0 lacked what d0067d0 calls). Prints the submodule commit it used.
set -euo pipefail
te=${1:?TE_MIRROR}; commit=${2:?COMMIT}; cutlass=${3:?CUTLASS_MIRROR}; out=${4:?OUT_DIR}
[ -e "$out" ] && { echo "stage_te.sh: $out exists; give a new folder" >&2; exit 2; }
git -C "$te" rev-parse -q --verify "$commit^{commit}" > /dev/null || { echo "stage_te.sh: no commit $commit in $te" >&2; exit 2; }
pin=$(git -C "$te" ls-tree "$commit" 3rdparty/cutlass | awk '$2 == "commit" {print $3}')
[ -n "$pin" ] || { echo "stage_te.sh: $commit pins no 3rdparty/cutlass submodule" >&2; exit 2; }
git -C "$cutlass" rev-parse -q --verify "$pin^{commit}" > /dev/null || {
    echo "stage_te.sh: the CUTLASS mirror lacks $pin (the commit TE pins); fetch a newer snapshot" >&2; exit 2; }
mkdir -p "$out/3rdparty/cutlass"
git -C "$te" archive "$commit" | tar xf - -C "$out"
git -C "$cutlass" archive "$pin" include tools/util/include | tar xf - -C "$out/3rdparty/cutlass"
echo "staged TE $commit with CUTLASS $pin (include, tools/util/include) in $out"
