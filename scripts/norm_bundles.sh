#!/usr/bin/env bash
# CPU side of issue 13 acceptance 1: the two trees the device runs compare, as tarballs for the
# device machine (nothing of TE is committed): NAME.tgz holds NAME/ = the original tree (its
# transformer_engine/common, tests/cpp and the top-level files TE's CMake reads) and NAME_mig.tgz
# the same tree after `codemod apply --target normalization --write`.
#
#   scripts/norm_bundles.sh TE_NORM_CHECKOUT OUT_DIR [NAME]     # NAME default te_norm
#
# Prints the apply summary; exit status that of apply (the bundles are written only on success).
set -eu
src=${1:?TE_NORM_CHECKOUT}; out=${2:?OUT_DIR}; name=${3:-te_norm}
py=${PYTHON:-python3}
mkdir -p "$out"; out=$(cd "$out" && pwd)
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
for side in "$name" "${name}_mig"; do
    mkdir -p "$scratch/$side"
    (cd "$src" && tar cf - --exclude=.git transformer_engine/common tests/cpp $(ls -d 3rdparty/cutlass 2>/dev/null) \
        $(ls -A | grep -v -e '^3rdparty$' -e '^transformer_engine$' -e '^tests$' -e '^\.git$' -e '^docs$' -e '^examples$' -e '^benchmarks$')) \
        | tar xf - -C "$scratch/$side"
done
mig="$scratch/${name}_mig"
git -C "$mig" init -q && git -C "$mig" add -A && git -C "$mig" -c user.name=codemod -c user.email=codemod@localhost commit -qm base
"$py" -m codemod apply --target normalization "$mig/transformer_engine/common" --write --report "$out/${name}_apply_report.md"
rm -rf "$mig/.git"
for side in "$name" "${name}_mig"; do
    tar czf "$out/$side.tgz" -C "$scratch" "$side"
    echo "wrote $out/$side.tgz"
done
