#!/usr/bin/env bash
# Installs codemod into ./.venv from the package registries (PyPI, Debian), from scratch.
# Clang's CUDA resource headers come from Debian's libclang-common-16-dev (the PyPI libclang
# wheel ships none); without root they are unpacked into .codemod-cache/ instead.
set -euo pipefail
cd "$(dirname "$0")/.."

resource=/usr/lib/llvm-16/lib/clang/16/include
if [ ! -f "$resource/__clang_cuda_runtime_wrapper.h" ] && [ ! -f .codemod-cache/clang-resource/usr/lib/llvm-16/lib/clang/16/include/__clang_cuda_runtime_wrapper.h ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-common-16-dev >/dev/null
  else
    mkdir -p .codemod-cache/debs .codemod-cache/clang-resource
    (cd .codemod-cache/debs && apt-get download libclang-common-16-dev)
    dpkg -x .codemod-cache/debs/libclang-common-16-dev_*.deb .codemod-cache/clang-resource
  fi
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
echo "codemod installed in .venv ($(.venv/bin/codemod --version))"
