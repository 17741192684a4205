"""`codemod impact`: command-line front of the build impact model."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser("impact", help="price TUs from build logs and predict builds")
    p.add_argument("log")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..errors import UsageError

    raise UsageError("impact is not implemented yet")
