"""A kernel's stub factory is named after the kernel in the rule's namespace: two migrated kernels
of one name in two namespaces (TE's transformer_engine::detail::reduce_dbias_kernel and
transformer_engine::reduce_dbias_kernel) would be one factory name for two kernels, the linker keeping
one and kernels.cpp finding one kernel for both. Apply refuses them, naming both."""

from types import SimpleNamespace

import pytest

from codemod.apply.plan.plan import _one_factory_per_name
from codemod.errors import ApplyError


def _kp(kid: str):
    return SimpleNamespace(name=kid.rsplit("::", 1)[-1], kernel=SimpleNamespace(id=kid))


def test_two_kernels_of_one_name_are_refused_naming_both():
    plans = [_kp("te::detail::reduce_dbias_kernel"), _kp("te::cast_kernel"), _kp("te::reduce_dbias_kernel")]
    with pytest.raises(ApplyError) as err:
        _one_factory_per_name(plans)
    message = str(err.value)
    assert "`reduce_dbias_kernel`" in message
    assert "te::detail::reduce_dbias_kernel" in message and "te::reduce_dbias_kernel" in message


def test_distinct_names_pass():
    _one_factory_per_name([_kp("te::detail::reduce_dbias_kernel"), _kp("te::transpose_kernel")])
