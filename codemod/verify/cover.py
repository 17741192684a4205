"""Greedy cover of a kernel's variant list: few variants that still use every value of every axis.

A variant is a mapping axis -> value (values compared by their string form). The cover is the
classic greedy set cover over (axis, value) pairs; ties go to the earlier variant, so the result
is stable for a stable input order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def axis_values(variants: Sequence[Mapping[str, object]]) -> set[tuple[str, str]]:
    """Every (axis, value) pair that some variant uses."""
    return {(axis, str(value)) for variant in variants for axis, value in variant.items()}


def greedy_cover(variants: Sequence[Mapping[str, object]], required: Sequence[int] = ()) -> list[int]:
    """Indices (ascending) of a subset of `variants` covering every (axis, value) pair, holding
    every index in `required` (variants that must be compiled themselves).

    Greedy set cover: at most H(n) times the optimum, and for axes that form a full cross
    product it picks max(|domain|) variants, the minimum.
    """
    pairs = [{(axis, str(value)) for axis, value in variant.items()} for variant in variants]
    uncovered = set().union(*pairs) if pairs else set()
    chosen: list[int] = sorted(set(required))
    for index in chosen:
        uncovered -= pairs[index]
    # A variant with no axes (a non-template kernel) still has to be compiled once.
    if variants and not uncovered and not chosen:
        return [0]
    while uncovered:
        best, best_gain = -1, 0
        for index, variant_pairs in enumerate(pairs):
            gain = len(variant_pairs & uncovered)
            if gain > best_gain:
                best, best_gain = index, gain
        chosen.append(best)
        uncovered -= pairs[best]
    return sorted(chosen)
