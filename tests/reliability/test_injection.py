"""Issue 16: every rule field that reaches generated C++ or CMake is checked when the rule is
loaded (schema patterns in codemod/schemas/rule.schema.json): injection strings are a RuleError
naming the rule file, the line and the key."""

from __future__ import annotations

import pytest
import yaml

from codemod.errors import RuleError
from codemod.rule import load_rule_file

from .conftest import ACTLIB_RULE

QUOTE = 'X"); system("rm -rf /"); //'
NEWLINE = "NAME\n#include </etc/passwd>"
CMAKE = "${CMAKE_COMMAND}"
CLOSE = "X) execute_process(COMMAND rm -rf /"

# (key path under migrate, whether the value reaches CMake)
FIELDS = [
    (("nvrtc_layer", "disable_env"), True),
    (("nvrtc_layer", "error_macro"), False),
    (("nvrtc_layer", "manager"), False),
    (("nvrtc_layer", "enabled"), False),
    (("nvrtc_layer", "header_type"), False),
    (("nvrtc_layer", "header"), False),
    (("nvrtc_layer", "error_header"), False),
    (("nvrtc_layer", "attribute_type"), False),
    (("namespace",), False),
    (("output_dir",), True),
    (("kernels", 0), False),
    (("translation_units", 0), True),
    (("stub_includes", 0), False),
    (("names", "default_namespace"), False),
    (("names", "values", "kPointwiseVec"), False),
    (("types", "enum"), False),
    (("types", "cases", "kFloat32", "type"), False),
    (("types", "cases", "kFloat32", "alias"), False),
    (("types", "cases", "kFloat32", "header"), False),
    (("kernel_strings", "prelude_namespace"), False),
    (("kernel_strings", "replace_with_prelude", 0), True),
    (("options", "always", 0), False),
    (("cmake", "file"), True),
    (("cmake", "string_header_function"), True),
    (("cmake", "legacy_option"), True),
    (("cmake", "target"), True),
    (("cmake", "sources_variable"), True),
]


def _rule_with(tmp_path, keys, value):
    doc = yaml.safe_load(ACTLIB_RULE.read_text())
    node = doc["migrate"]
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    path = tmp_path / "rule.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _cases():
    for keys, cmake in FIELDS:
        for value in (QUOTE, NEWLINE) + ((CMAKE, CLOSE) if cmake else ()):
            yield pytest.param(keys, value, id="/".join(map(str, keys)) + ":" + value[:6])


@pytest.mark.parametrize("keys, value", list(_cases()))
def test_injection_refused_at_load(tmp_path, keys, value):
    path = _rule_with(tmp_path, keys, value)
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    err = info.value
    assert err.where.startswith(f"{path}:") and err.where.split(":")[-1].isdigit()
    field = "/".join(["migrate", *(str(k) for k in keys if not isinstance(k, int))])
    assert err.message.startswith(field), err.message
    assert "\n" not in err.render()


@pytest.mark.parametrize("section, key", [("conditional", "option"), ("conditional", "cmake_option")])
def test_conditional_option_injection(tmp_path, section, key):
    entry = {"option": "--use_fast_math", "cmake_option": "ACTLIB_FAST_MATH", key: QUOTE}
    path = _rule_with(tmp_path, ("options", section), [entry])
    with pytest.raises(RuleError, match=f"migrate/options/{section}/0/{key}"):
        load_rule_file(path)


def test_shim_names_injection(tmp_path):
    shims = {"type_traits": {"include": "cuda/std/type_traits", "std_names": [QUOTE]}}
    path = _rule_with(tmp_path, ("kernel_strings", "shims"), shims)
    with pytest.raises(RuleError, match="std_names"):
        load_rule_file(path)


def test_per_kernel_option_key_and_value(tmp_path):
    path = _rule_with(tmp_path, ("options", "kernels"), {"actlib::unary_kernel": [QUOTE]})
    with pytest.raises(RuleError, match="migrate/options/kernels"):
        load_rule_file(path)
    path = _rule_with(tmp_path, ("options", "kernels"), {QUOTE: ["--device-int128"]})
    with pytest.raises(RuleError):
        load_rule_file(path)


def test_message_says_what_is_expected(tmp_path):
    path = _rule_with(tmp_path, ("nvrtc_layer", "disable_env"), QUOTE)
    with pytest.raises(RuleError) as info:
        load_rule_file(path)
    assert "is not a C/C++ identifier" in info.value.message


def test_shipped_rules_still_load():
    """Every rule in the repository (rules/, golden/, tests/, bench/) passes the patterns."""
    from .conftest import REPO

    paths = [p for d in ("rules", "golden", "tests", "bench") for p in (REPO / d).rglob("*.yaml")
             if p.read_text().startswith("id:") or "\nid:" in p.read_text()]
    assert len(paths) >= 8
    for path in paths:
        load_rule_file(path)


def test_apply_refuses_before_generating(cli, tmp_path):
    path = _rule_with(tmp_path, ("nvrtc_layer", "disable_env"), QUOTE)
    cli.fails("apply", tmp_path, "--target", path, "-q", says=(f"{path}:", "migrate/nvrtc_layer/disable_env"))
