"""Every diagnostic ID the code emits has a doc entry, and every documented ID is emitted."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_ids_documented_both_ways():
    code_ids = set()
    for p in (REPO / "codemod").rglob("*.py"):
        code_ids |= set(re.findall(r"\bCM\d{4}\b", p.read_text()))
    doc_ids = set(re.findall(r"^\| (CM\d{4}) \|", (REPO / "docs" / "diagnostics.md").read_text(), re.M))
    assert code_ids == doc_ids
