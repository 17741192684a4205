"""`codemod analyze`: command-line front of the analysis stage."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("analyze", help="find kernel templates, their axes and fan-out")
    p.add_argument("directory")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..errors import UsageError

    raise UsageError("analyze is not implemented yet")
