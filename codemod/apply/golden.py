"""Golden patch for a case: `python -m codemod.apply.golden CASE [--update]` prints the diff
against golden/<case>/expected/apply.patch; --update rewrites it (review the printed diff). The
case's rule is golden/<case>/rule.yaml, else golden/<case>/activation.yaml."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from .command import compute
from .patch import unified_diff

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
VERSION = "<version>"


def golden_patch(case: str) -> tuple[str, str]:
    root = GOLDEN / case / "input"
    rule = GOLDEN / case / "rule.yaml"
    if not rule.is_file():
        rule = GOLDEN / case / "activation.yaml"
    files, report, _ = compute(root, str(rule), version=VERSION)
    return unified_diff(files), report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("case")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args(argv)
    patch, report = golden_patch(args.case)
    expected = GOLDEN / args.case / "expected" / "apply.patch"
    old = expected.read_text() if expected.is_file() else ""
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), patch.splitlines(True),
                                               str(expected), "generated"))
    if args.update:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(patch)
        (expected.parent / "apply.report.md").write_text(report)
    return 0 if old == patch or args.update else 1


if __name__ == "__main__":
    raise SystemExit(main())
