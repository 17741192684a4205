"""`analyze --build-log`: which TUs count as migrated, the per-TU device share and the three what-ifs,
on the committed TE build log (TU names and kernel counts as TE's; no parse needed)."""

import pytest

from codemod.analysis.pricing import attach_impact
from codemod.model import Analysis, TranslationUnit
from tests.impact.conftest import TE_CSV, TE_LOG

MOVED = {"unary_kernel", "gated_act_kernel"}


def _analysis() -> Analysis:
    tus = [TranslationUnit("activation/relu.cu", [], {"unary_kernel": 180, "gated_act_kernel": 90, "cast_kernel": 230},
                           500, 0.0, 0),
           TranslationUnit("activation/gelu_grouped.cu", [], {"group_quantize_kernel": 1152}, 1152, 0.0, 0),
           TranslationUnit("common.cu", [], {}, 0, 0.0, 0)]
    return Analysis(schema_version="1.1", tool_version="t", root=".", target=None, translation_units=tus,
                    entry_points=[], kernels=[], sites=[], diagnostics=[], totals={}, stats={})


def test_only_tus_with_a_migrated_kernel_count():
    a = _analysis()
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    imp = a.impact
    assert imp["migrated_tus"] == ["activation/relu.cu"]
    relu = a.translation_units[0].price
    assert relu["migrated_share"] == pytest.approx(270 / 500)
    pred = relu["predicted_elapsed_s"]
    # device_removed keeps only host phases; the share model keeps 46% of the device phases on top.
    assert pred["device_removed"] < pred["instantiation_share"] < relu["elapsed_s"]
    host, device, elapsed = relu["host_s"], relu["device_s"], relu["elapsed_s"]
    assert pred["instantiation_share"] == pytest.approx(elapsed * (host + device * 230 / 500) / (host + device), abs=0.1)
    # gelu_grouped.cu (no migrated kernel) is TE's critical path: the wall cannot move.
    assert imp["predicted_wall_s"] == imp["replayed_wall_s"]
    assert imp["device_removed"]["cpu_s_after"] < imp["instantiation_share"]["cpu_s_after"] < imp["cpu_s_before"]
    assert "gelu_grouped" not in str(imp["migrated_tus"])
    assert imp["instantiation_share"]["critical_after"].endswith("activation/gelu_grouped.cu.o")


def test_without_a_migrate_list_every_kernel_counts():
    a = _analysis()
    attach_impact(a, TE_LOG, [TE_CSV], None)
    assert a.impact["migrated_tus"] == ["activation/relu.cu", "activation/gelu_grouped.cu"]
    assert a.translation_units[0].price["migrated_share"] == 1.0
    # gelu_grouped.cu loses its device phases; relu_grouped.cu (444 s, not in this analysis) then bounds it.
    assert 444 < a.impact["predicted_wall_s"] < a.impact["replayed_wall_s"] - 60


def test_text_report_shows_the_three_what_ifs_and_their_critical_step():
    from codemod.report.text import render

    a = _analysis()
    a.totals = dict.fromkeys(("translation_units", "entry_points", "kernels", "kernel_templates", "launch_sites",
                              "use_sites", "instantiations", "runtime_discoverable_kernels", "errors", "warnings"), 0)
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    text = render(a)
    assert "predicted after migration 556.271 s" in text and "1 TUs migrated" in text
    for what in ("instantiation_share", "device_removed", "tu_removed"):
        assert any(line.strip().startswith(what) and line.endswith("activation/gelu_grouped.cu.o")
                   for line in text.splitlines())


def test_without_nvcc_timings_only_the_tu_removed_bound_is_given():
    """No --nvcc-time: no host/device split, so the migrated TUs are removed whole (it used to
    divide by a zero phase sum)."""
    a = _analysis()
    attach_impact(a, TE_LOG, [], MOVED)
    imp = a.impact
    assert "instantiation_share" not in imp and "device_removed" not in imp
    assert imp["model"].startswith("migrated TUs removed")
    assert imp["cpu_s_after"] == imp["tu_removed"]["cpu_s_after"] < imp["cpu_s_before"]
    assert imp["policy"] == "1.12" and imp["policy_source"].startswith("log v")


def test_policy_master_starts_the_longest_work_first():
    """Every TU of this analysis migrated whole: under the recorded order (policy 1.12) the long
    fused_topk TU starts late; a duration-weighted scheduler (`master`) starts it at once."""
    a, b = _analysis(), _analysis()
    attach_impact(a, TE_LOG, [TE_CSV], None)
    attach_impact(b, TE_LOG, [TE_CSV], None, policy="master")
    assert b.impact["policy"] == "master" and b.impact["policy_source"] == "-p/--policy"
    assert b.impact["tu_removed"]["predicted_wall_s"] < a.impact["tu_removed"]["predicted_wall_s"]
    assert b.impact["replayed_wall_s"] == pytest.approx(b.impact["measured_wall_s"], abs=0.5)


def test_a_migrated_tu_the_log_does_not_build_is_listed_unpriced_and_a_foreign_log_refused():
    from codemod.errors import UsageError
    from codemod.report.text import render

    a = _analysis()
    a.translation_units.append(TranslationUnit("activation/new_since.cu", [], {"unary_kernel": 10}, 10, 0.0, 0))
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    assert a.impact["unpriced_tus"] == ["activation/new_since.cu"]
    assert a.impact["migrated_tus"] == ["activation/relu.cu", "activation/new_since.cu"]
    assert "instantiation_share" in a.impact          # the priced TU still gets the share model
    a.totals = dict.fromkeys(("translation_units", "entry_points", "kernels", "kernel_templates", "launch_sites",
                              "use_sites", "instantiations", "runtime_discoverable_kernels", "errors", "warnings"), 0)
    assert "not priced (no step of the build log builds them): activation/new_since.cu" in render(a)
    foreign = _analysis()
    foreign.translation_units = [TranslationUnit("kernels/other.cu", [], {"unary_kernel": 4}, 4, 0.0, 0)]
    with pytest.raises(UsageError, match="builds none of the 1 migrated TUs"):
        attach_impact(foreign, TE_LOG, [TE_CSV], MOVED)


def test_html_page_lists_the_what_ifs_the_policy_and_unpriced_tus():
    from codemod.report.html import render_html

    a = _analysis()
    a.translation_units.append(TranslationUnit("activation/new_since.cu", [], {"unary_kernel": 10}, 10, 0.0, 0))
    a.totals = dict.fromkeys(("translation_units", "entry_points", "kernels", "kernel_templates", "launch_sites",
                              "use_sites", "instantiations", "runtime_discoverable_kernels", "errors", "warnings"), 0)
    attach_impact(a, TE_LOG, [TE_CSV], MOVED, policy="master")
    page = render_html(a)
    assert "ninja policy master (-p/--policy)" in page
    share = a.impact["instantiation_share"]
    assert (f'<tr><td>instantiation_share</td><td class="n">{share["predicted_wall_s"]}</td>'
            f'<td class="n">{share["cpu_s_after"]}</td>') in page
    assert "Not priced (no step of the build log builds them): <code>activation/new_since.cu</code>" in page


def test_kernels_empty_for_the_built_arch_weigh_nothing():
    """cast_kernel's body is one `#if __CUDA_ARCH__ >= 1000` block (Kernel.body_arch_min) and the
    log's nvcc rows compiled relu.cu for compute_90 only: its 230 instantiations are empty there,
    so the migrated kernels hold the whole device share. A kernel guarded for an arch that was
    built keeps its weight."""
    from codemod.model import Kernel

    a = _analysis()
    a.kernels = [Kernel("cast_kernel", "cast_kernel", "cast.cuh", 1, True, [], body_arch_min=1000)]
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    relu = a.translation_units[0].price
    assert relu["migrated_share"] == 1.0 and relu["empty_instantiations"] == 230
    assert relu["predicted_elapsed_s"]["instantiation_share"] == relu["predicted_elapsed_s"]["device_removed"]
    a = _analysis()
    a.kernels = [Kernel("cast_kernel", "cast_kernel", "cast.cuh", 1, True, [], body_arch_min=900)]
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    assert a.translation_units[0].price["migrated_share"] == pytest.approx(270 / 500)
    assert "empty_instantiations" not in a.translation_units[0].price

