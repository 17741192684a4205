"""The greedy cover of a variant list: every (axis, value) pair used, few variants, stable."""

from __future__ import annotations

import itertools

from codemod.verify.cover import axis_values, greedy_cover


def _product(**axes):
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*axes.values())]


def test_cross_product_needs_only_the_largest_domain():
    variants = _product(IType=["float", "__half", "__nv_bfloat16"], OType=["float", "__half", "__nv_bfloat16",
                        "__nv_fp8_e4m3", "__nv_fp8_e5m2"], aligned=["true", "false"])
    chosen = greedy_cover(variants)
    assert len(chosen) == 5
    assert axis_values([variants[i] for i in chosen]) == axis_values(variants)


def test_irregular_list_is_covered_and_stable():
    variants = [
        {"IS_DBIAS": "false", "IS_DACT": "false", "OP": "&gelu"},
        {"IS_DBIAS": "false", "IS_DACT": "true", "OP": "&dgelu"},
        {"IS_DBIAS": "true", "IS_DACT": "true", "OP": "&dgelu"},
        {"IS_DBIAS": "true", "IS_DACT": "false", "OP": "nullptr"},
        {"IS_DBIAS": "false", "IS_DACT": "false", "OP": "nullptr"},
    ]
    chosen = greedy_cover(variants)
    assert axis_values([variants[i] for i in chosen]) == axis_values(variants)
    assert chosen == sorted(chosen)
    assert greedy_cover(variants) == chosen
    assert len(chosen) == 3


def test_single_value_axes_need_one_variant():
    variants = _product(nvec=["4"], ComputeType=["float"])
    assert greedy_cover(variants) == [0]


def test_kernel_without_axes_still_compiles_once():
    assert greedy_cover([{}]) == [0]
    assert greedy_cover([]) == []


def test_values_compare_by_text():
    variants = [{"N": 4}, {"N": "4"}, {"N": 8}]
    assert greedy_cover(variants) == [0, 2]


def test_required_variants_are_always_chosen():
    """Variants only reached from outside the analysis are compiled themselves, not just covered."""
    variants = [{"a": "1", "b": "x"}, {"a": "2", "b": "y"}, {"a": "1", "b": "y"}]
    assert greedy_cover(variants) == [0, 1]
    assert greedy_cover(variants, required=[2]) == [0, 1, 2]
    assert greedy_cover([{}], required=[0]) == [0]
