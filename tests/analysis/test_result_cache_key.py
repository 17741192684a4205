"""The cached analysis is keyed by the frontend code that made its facts, not only by the files."""

from pathlib import Path

from codemod.analysis import analyze
from codemod.rule import load_rule_file

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actlib"


def test_result_key_changes_with_the_indexer_code(monkeypatch):
    rule = load_rule_file(GOLDEN / "activation.yaml")
    facts = [{"tu": "ops/gelu.cu", "closure": {"ops/gelu.cu": "0" * 64}}]
    monkeypatch.setattr(analyze, "indexer_hash", lambda: "a" * 16)
    first = analyze._result_key(facts, [rule], GOLDEN / "input")
    monkeypatch.setattr(analyze, "indexer_hash", lambda: "b" * 16)
    assert analyze._result_key(facts, [rule], GOLDEN / "input") != first
