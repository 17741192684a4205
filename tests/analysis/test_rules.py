"""Rules are schema-validated data with file:line errors."""

from pathlib import Path

import pytest

from codemod.errors import RuleError
from codemod.rule import RULES_DIR, available_rules, load_rule, load_rule_file


def test_shipped_rules_load():
    names = available_rules()
    assert {"activation", "cast"} <= set(names)
    for name in names:
        rule = load_rule(name)
        assert rule.id == name and rule.translation_units


def test_bench_rules_load():
    """Experiment rules kept beside the benchmarks validate against the same schema."""
    bench = RULES_DIR.parent / "bench" / "rules"
    paths = sorted(bench.glob("*.yaml"))
    assert paths
    for path in paths:
        assert load_rule_file(path).id == path.stem

@pytest.mark.parametrize("text, where, message", [
    ("id: x\ndescription: d\nanalyze:\n  translation_units: []\n  entry_points: '^a'\n", ":4", "translation_units"),
    ("id: x\ndescription: d\nanalyze:\n  translation_units: ['a/*.cu']\n  entry_points: '^a'\n  bogus: 1\n", ":6", "bogus"),
    ("id: Bad-Id\ndescription: d\nanalyze:\n  translation_units: ['a']\n  entry_points: 'x'\n", ":1", "id"),
    ("id: x\ndescription: d\nanalyze:\n  translation_units: ['a']\n  entry_points: '(['\n", ":5", "bad regex"),
    ("id: x\n  description: [\n", ":2", "invalid YAML"),
])
def test_schema_errors_name_the_line(tmp_path, text, where, message):
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(RuleError) as exc:
        load_rule_file(path)
    rendered = exc.value.render()
    assert f"r.yaml{where}" in rendered, rendered
    assert message in rendered


def test_rule_by_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text((RULES_DIR / "cast.yaml").read_text().replace("id: cast", "id: mine"))
    assert load_rule(str(path)).id == "mine"
