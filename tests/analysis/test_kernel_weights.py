"""Per-kernel device weights fitted on per-unit times, and the moved share they give (synthetic units)."""

from __future__ import annotations

import numpy as np
import pytest

from codemod.analysis.kernel_weights import (INTERCEPT, compiles_at, device_seconds, fit_line, fit_weights, gate_of, gated_counts,
                                             host_kept, moved_share, nnls, target_arch)


def test_target_arch_and_gated_counts():
    assert target_arch("90a") == 900 and target_arch("120f") == 1200 and target_arch("x") is None
    counts = {"light": 10, "blackwell": 100, "hopper": 5}
    gates = {"blackwell": gate_of({"body_arch_min": 1000}), "light": gate_of({}),
             "hopper": gate_of({"body_arch_range": [900, 1000]})}
    assert gates["blackwell"] == (1000, None) and gates["hopper"] == (900, 1000) and gates["light"] is None
    assert gated_counts(counts, gates, 750) == {"light": 10, "blackwell": 0, "hopper": 0}
    assert gated_counts(counts, gates, 900) == {"light": 10, "blackwell": 0, "hopper": 5}
    assert gated_counts(counts, gates, 1030) == {"light": 10, "blackwell": 100, "hopper": 0}
    assert gated_counts(counts, gates, None) == counts
    assert compiles_at((None, 1000), 750) and not compiles_at((None, 1000), 1000)


def test_nnls_keeps_weights_non_negative():
    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    assert nnls(a, np.array([2.0, -1.0, 1.0])) == pytest.approx([1.5, 0.0])
    assert nnls(a, np.array([1.0, 2.0, 3.0])) == pytest.approx([1.0, 2.0])


def test_fit_weights_recovers_per_kernel_cost_and_the_unit_cost():
    # heavy: 2 s per instantiation, light: 0.1 s, 3 s per unit whatever it holds
    units = [{"heavy": 10, "light": 100}, {"heavy": 40, "light": 100}, {"heavy": 5, "light": 20}, {"light": 50}]
    rows = [(c, 3 + 2 * c.get("heavy", 0) + 0.1 * c["light"]) for c in units]
    w = fit_weights(rows)
    assert w["heavy"] == pytest.approx(2.0) and w["light"] == pytest.approx(0.1) and w[INTERCEPT] == pytest.approx(3)
    # a known weight is taken out first and returned as given
    w = fit_weights(rows, fixed={"heavy": 2.0})
    assert w["heavy"] == 2.0 and w["light"] == pytest.approx(0.1)


def test_moved_share_weighs_time_not_count():
    w = {"heavy": 2.0, "light": 0.1, INTERCEPT: 3.0}
    counts = {"heavy": 10, "light": 100}           # 20 s + 10 s + 3 s
    assert moved_share(counts, w, {"heavy"}) == pytest.approx(20 / 33)   # by count: 10 / 110
    assert moved_share({"heavy": 0, "light": 100}, w, {"heavy"}) == 0.0  # gated: weighs nothing
    assert moved_share({"other": 1}, {"a": 1.0, "b": 3.0}, {"other"}) == 1.0   # unknown kernel: mean weight
    assert moved_share({}, {}, set()) == 0.0
    assert device_seconds(counts, w) == pytest.approx(33.0)
    assert device_seconds(counts, w, leave={"heavy"}) == pytest.approx(13.0)


def test_host_line_and_the_host_share_kept():
    a, b = fit_line([(0, 5.0), (100, 8.0), (200, 11.0)])
    assert a == pytest.approx(5.0) and b == pytest.approx(0.03)
    assert host_kept(11.0, 100, b) == pytest.approx(8 / 11)
    assert host_kept(1.0, 1000, b) == 0.0 and host_kept(0.0, 10, b) == 1.0
    with pytest.raises(ValueError):
        fit_line([(1, 1.0)])
