"""Command-line entry point: `codemod analyze|impact|...`. main(argv) -> exit code.

Exit codes: 0 success, 1 findings (error-level diagnostics, or pending changes with --check),
2 usage/config/parse failure, 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from . import __version__
from .errors import CodemodError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _commands():
    # Each stage package exposes add_parser(subparsers) -> sets args.run(args) -> int.
    from .analysis import command as analyze_command
    from .impact import command as impact_command
    from .verify import command as verify_command
    from .apply import command as apply_command
    from .parity import command as parity_command

    return [analyze_command, impact_command, verify_command, apply_command, parity_command]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits 2 on usage errors already; keep one line
        self.print_usage(sys.stderr)
        raise SystemExit(f"codemod: error: {message}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="codemod", description="Move template-heavy CUDA kernels from build-time "
                     "instantiation to NVRTC: analyze, price, apply, verify.")
    parser.add_argument("--version", action="version", version=f"codemod {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in _commands():
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return EXIT_USAGE
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    if not getattr(args, "run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return args.run(args)
    except CodemodError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"codemod: error: {exc.render()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("codemod: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line unless --debug
        if args.debug:
            raise
        print(f"codemod: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    raise SystemExit(main())
