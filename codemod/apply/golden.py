"""Golden patch for a case: `python -m codemod.apply.golden CASE [--update]` prints the diff
against golden/<case>/expected/apply.patch and apply.manifest.json (the manifest apply keeps
outside the tree); --update rewrites them (review the printed diff). The
case's rule is golden/<case>/rule.yaml, else golden/<case>/activation.yaml."""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from pathlib import Path

from .. import strict_json
from .command import compute
from .write.patch import unified_diff

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
VERSION = "<version>"


def golden_patch(case: str) -> tuple[str, str, str]:
    """(patch, report, manifest): the manifest without its `edited` texts (the patch shows those)."""
    root = GOLDEN / case / "input"
    rule = GOLDEN / case / "rule.yaml"
    if not rule.is_file():
        rule = GOLDEN / case / "activation.yaml"
    files, report, migration = compute(root, str(rule), version=VERSION)
    doc = json.loads(migration.manifest)
    doc.pop("edited", None)
    # the layer part's texts are the patch's too: which files it touches, and a hash of each text
    doc["layer"] = {p: t if t is None else hashlib.sha256(t.encode()).hexdigest()
                    for p, t in doc.get("layer", {}).items()}
    return unified_diff(files), report, strict_json.dumps(doc, "manifest", indent=1) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("case")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args(argv)
    patch, report, manifest = golden_patch(args.case)
    folder = GOLDEN / args.case / "expected"
    same = True
    for name, text in (("apply.patch", patch), ("apply.manifest.json", manifest)):
        expected = folder / name
        old = expected.read_text() if expected.is_file() else ""
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                   str(expected), "generated"))
        same = same and old == text
        if args.update:
            folder.mkdir(parents=True, exist_ok=True)
            expected.write_text(text)
    if args.update:
        (folder / "apply.report.md").write_text(report)
    return 0 if same or args.update else 1


if __name__ == "__main__":
    raise SystemExit(main())
