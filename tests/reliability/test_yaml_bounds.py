"""Issue 16: rule YAML is loaded with bounds: an alias bomb, a recursive alias, an oversized or
deeply nested file fail fast with a RuleError naming the file."""

from __future__ import annotations

import time

import pytest

from codemod import rule as rule_mod
from codemod.errors import RuleError
from codemod.rule import load_rule_file

BOMB = "".join(f"{chr(97 + i)}: &{chr(97 + i)} [" + ",".join([f"*{chr(96 + i)}" if i else '"lol"'] * 9) + "]\n"
               for i in range(10))


def test_alias_bomb_fails_fast(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    started = time.perf_counter()
    with pytest.raises(RuleError, match="expands to more than"):
        load_rule_file(path)
    # NOTE: 55 s and 5.8 GB before the bound; well under 0.2 s with it. 1 s leaves room for slow CI.
    assert time.perf_counter() - started < 1.0


def test_alias_bomb_through_cli(cli, lib, tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    cli.fails("analyze", lib, "-q", "--target", path, says=(f"{path}:", "aliases"))


def test_recursive_alias(tmp_path):
    path = tmp_path / "rec.yaml"
    path.write_text("a: &a [1, *a]\n")
    with pytest.raises(RuleError, match="recursive YAML alias") as info:
        load_rule_file(path)
    assert info.value.where == f"{path}:1"


def test_a_few_aliases_are_fine(tmp_path):
    path = tmp_path / "ok.yaml"
    path.write_text("id: ok\ndescription: d\nanalyze:\n  translation_units: &tus ['*.cu']\n"
                    "  entry_points: '^e'\n  exclude: *tus\n")
    assert load_rule_file(path).exclude == ["*.cu"]


def test_oversized_rule(tmp_path, monkeypatch):
    monkeypatch.setattr(rule_mod, "MAX_RULE_BYTES", 1000)
    path = tmp_path / "big.yaml"
    path.write_text("id: x\n" + "# padding\n" * 200)
    with pytest.raises(RuleError, match="larger than"):
        load_rule_file(path)


@pytest.mark.parametrize("text", ["a: " + "[" * 1000 + "]" * 1000 + "\n",
                                  "a: " + "[" * 500_000 + "]" * 500_000 + "\n",
                                  "a:\n" + "".join(" " * (i + 1) + "b:\n" for i in range(900))])
def test_deep_nesting(tmp_path, text):
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    started = time.perf_counter()
    with pytest.raises(RuleError, match="nest"):
        load_rule_file(path)
    # NOTE: PyYAML's recursive composer took seconds on 1000 brackets; the event pass takes ms
    assert time.perf_counter() - started < 1.0


def test_empty_rule_file(tmp_path):
    path = tmp_path / "empty.yaml"
    path.write_text("")
    with pytest.raises(RuleError, match="must be a mapping"):
        load_rule_file(path)
