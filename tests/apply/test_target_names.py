"""The migrated tree names nothing of the tool (issue 29): no banner, marker, guard, macro,
identifier or message with the tool's name in any line a golden rule adds."""

import pytest

from codemod.apply.golden import GOLDEN, golden_patch

CASES = sorted(p.name for p in GOLDEN.iterdir()
               if (p / "rule.yaml").is_file() or (p / "activation.yaml").is_file())


def _added_lines_saying(case: str, words: tuple[str, ...]) -> list[str]:
    """`path: line` of each line the case's golden patch adds that holds one of `words` (any case)."""
    patch, _, _ = golden_patch(case)
    said, path = [], None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:]
        elif line.startswith("+") and any(w in line.lower() for w in words):
            said.append(f"{path}: {line[1:].strip()}")
    return said


@pytest.mark.parametrize("case", CASES)
def test_no_added_line_names_the_tool(case):
    named = _added_lines_saying(case, ("codemod",))
    assert not named, f"{len(named)} added line(s) name the tool:\n" + "\n".join(named[:20])


# The rule's own vocabulary: its keys (migrate.shared_variables, kernel_strings.include_first), the
# rule and its analysis. A comment in the target explains the code, not how the tool made it.
RULE_WORDS = ("migrate.", "kernel_strings.", "rule's", "the rule", "rule schema", "analysed", "analyzed")


@pytest.mark.parametrize("case", CASES)
def test_no_added_line_speaks_the_rules_language(case):
    said = _added_lines_saying(case, RULE_WORDS)
    assert not said, f"{len(said)} added line(s) speak of the rule:\n" + "\n".join(said[:20])


def test_guards_follow_the_convention_most_headers_use(tmp_path):
    from codemod.apply.plan.target_names import guard_convention

    for path, guard in (("util/rtc.h", "TRANSFORMER_ENGINE_COMMON_UTIL_RTC_H_"),
                        ("util/math.h", "TRANSFORMER_ENGINE_COMMON_UTIL_MATH_H_"),
                        ("util/ptx.cuh", "TRANSFORMER_ENGINE_PTX_CUH_"),          # an outlier: outvoted
                        ("common.h", "TRANSFORMER_ENGINE_COMMON_COMMON_H_")):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"/* license */\n#ifndef {guard}\n#define {guard}\n#endif  // {guard}\n")
    (tmp_path / "once.h").write_text("#pragma once\n")
    conv = guard_convention(tmp_path, "TransformerEngine")
    assert conv.guard("activation/rtc/kernels.h") == "TRANSFORMER_ENGINE_COMMON_ACTIVATION_RTC_KERNELS_H_"


def test_without_a_convention_guards_take_the_library_name(tmp_path):
    from codemod.apply.plan.target_names import guard_convention

    (tmp_path / "a.h").write_text("#pragma once\n")
    assert guard_convention(tmp_path, "actlib").guard("rtc/kernels.h") == "ACTLIB_RTC_KERNELS_H_"


def test_macros_take_the_error_macros_prefix():
    from types import SimpleNamespace

    from codemod.apply.plan.target_names import macro_prefix

    assert macro_prefix(SimpleNamespace(layer={"error_macro": "NVTE_ERROR"}, namespace="transformer_engine::rtc")) \
        == "NVTE"
    assert macro_prefix(SimpleNamespace(layer={}, namespace="::actlib::rtc_activation")) == "ACTLIB"


def test_a_migration_is_recognised_by_kernels_h_declaring_the_rules_namespace(tmp_path):
    from types import SimpleNamespace

    from codemod.apply.write import migrated

    spec = SimpleNamespace(output_dir="rtc/act", namespace="actlib::rtc_activation")
    assert migrated.recognised(tmp_path, spec) is None
    (tmp_path / "rtc/act").mkdir(parents=True)
    (tmp_path / "rtc/act/kernels.h").write_text("namespace actlib::rtc_other {\n}\n")
    assert migrated.recognised(tmp_path, spec) is None
    (tmp_path / "rtc/act/kernels.h").write_text("namespace actlib {\nnamespace rtc_activation {\n}\n}\n")
    assert migrated.recognised(tmp_path, spec) == "rtc/act/kernels.h"
    (tmp_path / "rtc/act/kernels.h").write_text("namespace actlib::rtc_activation {\n}\n")
    assert migrated.recognised(tmp_path, spec) == "rtc/act/kernels.h"
