"""`python -m codemod.parity [run] ARGS` = `codemod parity run ARGS`, and `python -m codemod.parity
build ARGS` = `codemod parity build ARGS`, without the analysis stack (for GPU machines that lack
libclang and tree-sitter)."""

from __future__ import annotations

import argparse
import sys

from ..cli import add_global_flags, fill_global_flags
from ..errors import CodemodError
from .command import _build, _run, add_build_arguments, add_run_arguments


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verb = argv.pop(0) if argv[:1] in (["build"], ["run"]) else "run"
    parser = argparse.ArgumentParser(prog=f"python -m codemod.parity{' build' if verb == 'build' else ''}")
    (add_build_arguments if verb == "build" else add_run_arguments)(parser)
    add_global_flags(parser)
    args = fill_global_flags(parser.parse_args(argv))
    try:
        return _build(args) if verb == "build" else _run(args)
    except CodemodError as exc:
        print(f"codemod parity: error: {exc.render()}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
