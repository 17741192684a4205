"""Golden analysis documents: the normalized JSON a golden case is compared against.

Regenerated only by `python -m codemod.analysis.golden` (review the diff before committing).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..model import Analysis
from .. import strict_json

REPO = Path(__file__).resolve().parents[2]
CASES = ("actlib", "castlib", "routerlib", "normlib", "scopelib", "scanlib", "cscanlib")
# Cases analysed under a rule of their own (golden/<case>/<file>); the others with no rule.
CASE_RULES = {"normlib": "normlib.yaml", "routerlib": "rule.yaml", "scopelib": "rule.yaml", "cscanlib": "rule.yaml"}


def normalized(a: Analysis) -> dict:
    """The analysis without what varies between runs and machines (times, cache, tool version)."""
    doc = a.to_json()
    doc.pop("stats", None)
    doc["tool_version"] = "<version>"
    for tu in doc["translation_units"]:
        tu.pop("parse_seconds", None)
        tu.pop("from_cache", None)
    return doc


def analyze_case(case: str, **kw) -> Analysis:
    from .analyze import analyze

    from ..rule import load_rule_file

    rules = [load_rule_file(REPO / "golden" / case / CASE_RULES[case])] if case in CASE_RULES else []
    return analyze(REPO / "golden" / case / "input", rules, **kw)


def dump(doc: dict) -> str:
    return strict_json.dumps(doc, "golden analysis", indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    for case in argv or CASES:
        path = REPO / "golden" / case / "expected" / "analysis.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(normalized(analyze_case(case))))
        print(f"wrote {path.relative_to(REPO)}: review it with git diff before committing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
