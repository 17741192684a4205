"""axes.classify: the reason of an unresolved axis does not depend on set iteration order."""

from codemod.analysis.axes import classify


def test_unresolved_reason_is_the_same_whatever_the_set_order():
    reasons = [f"no caller binds 'p{i}' of f" for i in range(8)]
    for order in (reasons, reasons[::-1]):
        sources = frozenset(("unresolved", r) for r in order) | {("entry_param", "x")}
        assert classify(sources, ["a"], False, []) == ("unresolved", False, min(reasons))
