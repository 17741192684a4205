"""Regenerate the golden parity driver: `python -m codemod.parity.golden [--update]` prints the
drift from tests/parity/expected/actlib_driver.cu; --update rewrites it (review the diff)."""

from __future__ import annotations

import difflib
import json
import sys
from pathlib import Path

from ..rule import load_rule
from .driver import render_driver
from .plan import build_plan, load_profile

REPO = Path(__file__).resolve().parents[2]
EXPECTED = REPO / "tests" / "parity" / "expected" / "actlib_driver.cu"


def golden_driver() -> str:
    case = REPO / "golden" / "actlib"
    plan = build_plan(json.loads((case / "expected" / "analysis.json").read_text()),
                      load_rule(str(case / "activation.yaml")).raw, load_profile("actlib"), case / "input")
    return render_driver(plan, version="<version>")


def main(argv: list[str]) -> int:
    text = golden_driver()
    old = EXPECTED.read_text() if EXPECTED.is_file() else ""
    sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                               "expected", "generated"))
    if "--update" in argv:
        EXPECTED.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
