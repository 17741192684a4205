"""apply's check that `<output_dir>/kernels.h` compiles as a unit's first include (self_contained.py):
every rewritten header includes it, possibly before the headers declaring what it names."""

from __future__ import annotations

import pytest

from codemod.apply.command import compute
from codemod.apply.golden import GOLDEN
from codemod.apply.check.self_contained import kernels_h_errors

RULE = str(GOLDEN / "actlib" / "activation.yaml")
HEADER = "rtc/activation/kernels.h"


def test_the_golden_kernels_h_is_self_contained_and_a_name_it_cannot_see_is_caught():
    root = GOLDEN / "actlib" / "input"
    assert not (root / "rtc/activation").exists()        # a new folder: its files exist only unsaved
    files, _, plan = compute(root, RULE)
    assert kernels_h_errors(root, plan.spec.output_dir, plan.spec.include_dirs, files, []) == []
    old, text = files[HEADER]
    # a spelling of a type declared only in a header kernels.h does not include (TE's DequantizeParam)
    broken = text.replace("#if ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION",
                          "ACTLIB_RTC_SPELLING(type_arg, ::actlib::DeclaredElsewhere)\n"
                          "#if ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION", 1)
    assert broken != text
    errors = kernels_h_errors(root, plan.spec.output_dir, plan.spec.include_dirs, {**files, HEADER: (old, broken)}, [])
    assert errors and any("DeclaredElsewhere" in e for e in errors), errors


@pytest.mark.slow
def test_a_unit_reaching_kernels_h_through_a_rewritten_header_is_parsed_with_it(tmp_path):
    """The rule's units, parsed as migrated: kernels.h sits in a folder apply creates, which the
    rewritten header's include goes through (its path is made absolute for clang)."""
    root = GOLDEN / "actlib" / "input"
    files, _, plan = compute(root, RULE)
    units = [u for u in plan.spec.translation_units if (root / u).is_file()]
    assert units
    assert kernels_h_errors(root, plan.spec.output_dir, plan.spec.include_dirs, files, [], units=units) == []
    old, text = files[HEADER]
    broken = text.replace("#if ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION",
                          "ACTLIB_RTC_SPELLING(type_arg, ::actlib::DeclaredElsewhere)\n"
                          "#if ACTLIB_BUILD_LEGACY_STATIC_ACTIVATION", 1)
    errors = kernels_h_errors(root, plan.spec.output_dir, plan.spec.include_dirs, {**files, HEADER: (old, broken)},
                              [], units=units[:1])
    assert errors and errors[0].startswith(f"{units[0]}: {HEADER}:") and "DeclaredElsewhere" in errors[0], errors
