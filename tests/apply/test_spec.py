"""The rule's migrate: section is schema-checked: unknown keys and wrong types name file:line."""

from __future__ import annotations

import pytest

from codemod.apply.golden import GOLDEN
from codemod.apply.plan.spec import migrate_spec
from codemod.errors import RuleError
from codemod.rule import load_rule_file

RULE = (GOLDEN / "actlib" / "activation.yaml").read_text()


def _line(text: str, needle: str) -> int:
    return text[:text.index(needle)].count("\n") + 1


@pytest.mark.parametrize("old, new, field", [
    ("  output_dir: rtc/activation\n", "  output_dir: rtc/activation\n  outptu_dir: x\n", "outptu_dir"),
    ("    legacy_option: ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION\n", "    legacy_option: ACTLIB_STATIC\n",
     "migrate/cmake/legacy_option"),
    ("  namespace: actlib::rtc_activation\n", "  namespace: [actlib]\n", "migrate/namespace"),
    ("      - {option: --use_fast_math, cmake_option: ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH, sources: [activation/*.cu]}\n",
     "      - {option: --use_fast_math, sources: [activation/*.cu]}\n", "migrate/options/conditional/0"),
    ("      - {option: --use_fast_math, cmake_option: ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH, sources: [activation/*.cu]}\n",
     "      - {option: --use_fast_math, cmake_option: ACTLIB_BUILD_ACTIVATION_WITH_FAST_MATH, sources: []}\n",
     "migrate/options/conditional/0/sources"),
    ("    error_macro: ACTLIB_ERROR\n", "    error_macro: ACTLIB_ERROR\n    attribute_type: [1]\n", "migrate/nvrtc_layer/attribute_type"),
])
def test_migrate_schema_errors_name_the_line(tmp_path, old, new, field):
    assert old in RULE
    text = RULE.replace(old, new)
    path = tmp_path / "rule.yaml"
    path.write_text(text)
    with pytest.raises(RuleError) as exc:
        load_rule_file(path)
    rendered = exc.value.render()
    assert field in rendered
    bad = new.strip().splitlines()[-1].strip()
    assert f"rule.yaml:{_line(text, bad)}:" in rendered, rendered


def test_rule_without_migrate_section_is_a_rule_error(tmp_path):
    path = tmp_path / "rule.yaml"
    path.write_text(RULE.split("migrate:")[0])
    with pytest.raises(RuleError, match="has no migrate: section"):
        migrate_spec(load_rule_file(path))


def test_kernel_options_must_name_a_migrated_kernel(tmp_path):
    old = "    conditional:\n"
    assert old in RULE
    path = tmp_path / "rule.yaml"
    path.write_text(RULE.replace(old, "    kernels: {actlib::no_such_kernel: [-default-device]}\n" + old, 1))
    with pytest.raises(RuleError) as exc:
        migrate_spec(load_rule_file(path))
    assert "actlib::no_such_kernel" in exc.value.render()
    path.write_text(RULE.replace(old, "    kernels: {actlib::unary_kernel: [-default-device]}\n" + old, 1))
    assert migrate_spec(load_rule_file(path)).options["kernels"] == {"actlib::unary_kernel": ["-default-device"]}


def test_layer_cache_has_no_pch_or_minimal_any_more(tmp_path):
    """`nvrtc_layer.cache` is the small cache (docs/rtc_cache.md, what went away): its old `pch` and
    `minimal` keys are unknown, named with their line."""
    old = "      default_dir: actlib/rtc\n"
    assert old in RULE
    path = tmp_path / "rule.yaml"
    path.write_text(RULE)
    assert migrate_spec(load_rule_file(path)).layer["cache"] == {"env_prefix": "ACTLIB_RTC_CACHE",
                                                                 "default_dir": "actlib/rtc"}
    for key in ("pch", "minimal"):
        text = RULE.replace(old, old + f"      {key}: true\n")
        path.write_text(text)
        with pytest.raises(RuleError) as exc:
            load_rule_file(path)
        rendered = exc.value.render()
        assert key in rendered and f"rule.yaml:" in rendered
