"""Template arguments a launch leaves to deduction: passed explicitly from the analysis'
`deduced_from`, refused without it."""

from codemod.apply.plan.plan import _deduced_arguments
from codemod.model import Axis, Site


def _site(*axes: Axis, via: str | None = None) -> Site:
    return Site(id="k.h:10:5", kind="launch", api="<<<>>>", kernel="ns::k", function="ns::f",
                file="k.h", line=10, col=5, via=via, axes=list(axes))


def _axis(param: str, arg: str = "", deduced: dict | None = None) -> Axis:
    return Axis(param=param, kind="type", arg=arg, binding="type_switch", discoverable=True,
                reason="", deduced_from=deduced)


def test_spelled_launch_needs_nothing():
    assert _deduced_arguments(_site(_axis("N", "4"), _axis("T", "float"))) == ([], None)


def test_deduced_parameters_follow_the_spelled_ones_in_order():
    site = _site(_axis("N", "nvec"), _axis("In", deduced={"argument": 0, "type": "InputType"}),
                 _axis("Out", deduced={"argument": 2, "type": "OutputType"}))
    assert _deduced_arguments(site) == (["InputType", "OutputType"], None)


def test_deduced_without_a_spelled_type_is_refused():
    site = _site(_axis("N", "nvec"), _axis("In", deduced={"argument": 0, "type": "InputType"}), _axis("Out"))
    args, why = _deduced_arguments(site)
    assert args == [] and "Out" in why and "In," not in why and "deduced_from" in why


def test_kernel_in_a_variable_is_not_a_deduction():
    assert _deduced_arguments(_site(_axis("T"), via="kernel")) == ([], None)
