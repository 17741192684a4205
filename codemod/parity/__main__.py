"""`python -m codemod.parity ARGS` = `codemod parity run ARGS`, without the analysis stack (for GPU
machines that lack libclang and tree-sitter)."""

from __future__ import annotations

import argparse
import sys

from ..errors import CodemodError
from .command import _run, add_run_arguments


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codemod.parity")
    add_run_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except CodemodError as exc:
        print(f"codemod parity: error: {exc.render()}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
