#!/usr/bin/env bash
# CPU side of issue 13 acceptance 1: the trees the device run compares, as tarballs for the device
# machine (nothing of TE is committed). NAME.tgz holds NAME/ = the original tree (its
# transformer_engine/common, tests/cpp and the top-level files TE's CMake reads; no .git, docs,
# examples, benchmarks), NAME_mig.tgz the same tree after `codemod apply --target normalization
# --write` on a git copy of it (NAME_mig.patch: that copy's diff), and with HAND=DIR NAME_hand.tgz a third tree cut the same way (TE's
# own hand migration, aef96db0c, for the side by side).
#
#   scripts/norm_bundles.sh TE_NORM_CHECKOUT OUT_DIR [NAME]     # NAME default te_norm
#
#   TARGETS="R ..." the rules applied, in order (default: normalization); the first apply gets
#                   FIRST_ARGS (e.g. its --build-log/--nvcc-time), the later ones --allow-dirty;
#                   APPLY_ARGS go to every apply (e.g. --no-precheck for a trial)
#   HAND=DIR        also bundle DIR as NAME_hand.tgz
#   VERIFY="ARGS"   run `codemod verify ARGS --json OUT/NAME_verify.json` on the migrated git copy
#                   (e.g. VERIFY="--no-host -j 2"); its exit status is kept in OUT/NAME_verify.rc
#
# Also written to OUT_DIR: NAME_apply_report.md, NAME_mig_manifests/ (the manifests apply kept in
# the copy's git dir: `codemod verify --manifest`, the rtc cache bench's --manifests) and
# NAME_headers.txt (which files the C++ tests include differ between the trees: the tests are built
# once and run against each library only when that list is empty).
# Prints the apply summary; exit status that of apply (the bundles are written only on success).
set -eu
src=${1:?TE_NORM_CHECKOUT}; out=${2:?OUT_DIR}; name=${3:-te_norm}
py=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"; out=$(cd "$out" && pwd)
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT

slim() {  # slim SOURCE_CHECKOUT DEST: what TE's library and C++ test builds read, nothing else
    mkdir -p "$2"
    # shellcheck disable=SC2046
    (cd "$1" && tar cf - --exclude=.git transformer_engine/common tests/cpp $(ls -d 3rdparty/cutlass 2>/dev/null) \
        $(ls -A | grep -v -e '^3rdparty$' -e '^transformer_engine$' -e '^tests$' -e '^\.git$' -e '^docs$' \
              -e '^examples$' -e '^benchmarks$')) | tar xf - -C "$2"
}

# apply edits files outside transformer_engine/common too (docs/envvars.rst): it runs on a whole
# git copy of the checkout, and the migrated bundle is cut from that copy afterwards.
mig="$scratch/full_mig"
mkdir -p "$mig"
(cd "$src" && tar cf - --exclude=.git .) | tar xf - -C "$mig"
git -C "$mig" init -q && git -C "$mig" add -A && git -C "$mig" -c user.name=codemod -c user.email=codemod@localhost commit -qm base
first=1
for target in ${TARGETS:-normalization}; do
    if [ $first = 1 ]; then
        # shellcheck disable=SC2086
        "$py" -m codemod apply --target "$target" "$mig/transformer_engine/common" --write ${FIRST_ARGS:-} ${APPLY_ARGS:-} \
            --report "$out/${name}_apply_report.md"
        first=0
    else
        # shellcheck disable=SC2086
        "$py" -m codemod apply --target "$target" "$mig/transformer_engine/common" --write --allow-dirty ${APPLY_ARGS:-} \
            --report "$out/${name}_apply_report_$target.md"
    fi
done
git -C "$mig" add -A && git -C "$mig" diff --cached --stat | tail -1
git -C "$mig" diff --cached --binary > "$out/${name}_mig.patch"
rm -rf "$out/${name}_mig_manifests"
cp -r "$mig/.git/codemod/manifests" "$out/${name}_mig_manifests"
if [ -n "${VERIFY:-}" ]; then
    # shellcheck disable=SC2086
    set +e; "$py" -m codemod verify "$mig/transformer_engine/common" $VERIFY --json "$out/${name}_verify.json"
    echo $? > "$out/${name}_verify.rc"; set -e
fi

slim "$src" "$scratch/$name"
slim "$mig" "$scratch/${name}_mig"
sides=("$name" "${name}_mig")
if [ -n "${HAND:-}" ]; then
    slim "$HAND" "$scratch/${name}_hand"
    sides+=("${name}_hand")
fi

"$py" "$here/norm_test_headers.py" "$scratch/$name" "${sides[@]/#/$scratch/}" > "$out/${name}_headers.txt" || true
cat "$out/${name}_headers.txt"
for side in "${sides[@]}"; do
    tar czf "$out/$side.tgz" -C "$scratch" "$side"
    echo "wrote $out/$side.tgz"
done
