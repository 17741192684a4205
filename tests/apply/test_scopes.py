"""Template arguments spelled relative to a nested namespace (golden/scopelib): the name
expressions name what C++ finds from the scope that spelled them, not `names.default_namespace`."""

from __future__ import annotations

import difflib
import json
import shutil

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main
from codemod.frontend.source_text import substitute

RULE = GOLDEN / "scopelib" / "rule.yaml"


def test_scopelib_golden_patch_matches_expected():
    """Before scoped spellings apply named `::scopelib::inner::Config<1, true>` and
    `&::scopelib::detail::identity` (the rule's default namespace), and the NVRTC precheck
    refused the kernel: no patch."""
    from codemod.apply.golden import golden_patch

    patch, _, manifest = golden_patch("scopelib")
    assert manifest == (GOLDEN / "scopelib" / "expected" / "apply.manifest.json").read_text()
    expected = (GOLDEN / "scopelib" / "expected" / "apply.patch").read_text()
    if patch != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), patch.splitlines(True), n=2))
        pytest.fail("golden patch drifted (regenerate with `python -m codemod.apply.golden scopelib "
                    "--update` and review):\n" + diff[:8000])


def test_arguments_are_named_from_the_scope_that_spells_them(tmp_path, capsys):
    """`inner::Config` and `detail::identity` spelled in scopelib::quant::fp (the launch's scope),
    `fp::inner::Config` and `fp::detail::square` spelled in scopelib::quant::sq and launched from
    a launcher of scopelib: every variant's name expression is fully qualified, none in the
    rule's default namespace."""
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scopelib" / "input", root)
    assert main(["analyze", str(root), "--target", str(RULE), "--json", str(tmp_path / "a.json"), "-q"]) == 0
    doc = json.loads((tmp_path / "a.json").read_text())
    args = {tuple(v["args"][:2]) for s in doc["sites"] for v in s["variants"]}
    assert args == {("::scopelib::quant::fp::inner::Config<1, true>", "::scopelib::quant::fp::detail::identity"),
                    ("::scopelib::quant::fp::inner::Config<2, true>", "::scopelib::quant::fp::detail::identity"),
                    ("::scopelib::quant::fp::inner::Config<0, false>", "::scopelib::quant::fp::detail::square")}
    capsys.readouterr()
    assert main(["apply", "--target", str(RULE), str(root), "--diff", str(tmp_path / "p.diff"), "-q"]) == 0, \
        capsys.readouterr().err
    patch = (tmp_path / "p.diff").read_text()
    assert "SCOPELIB_RTC_SPELLING(type_arg, ::scopelib::quant::fp::inner::Config<0, false>)" in patch
    assert "SCOPELIB_RTC_SPELLING(fn_arg, &::scopelib::quant::fp::detail::identity)" in patch
    assert "::scopelib::inner::" not in patch and "::scopelib::detail::" not in patch


def test_a_name_of_the_outermost_namespace_keeps_its_spelling():
    """golden/actlib spells `Empty`, `gelu<fp32, Empty>` and `dequant::DequantizeParam` in
    namespace actlib: they stay as written (apply qualifies them in `names.default_namespace`)."""
    doc = json.loads((GOLDEN / "actlib" / "expected" / "analysis.json").read_text())
    values = {v for s in doc["sites"] for a in s["axes"] for v in a["domain"]}
    assert {"Empty", "dequant::DequantizeParam", "gelu<float, Empty>"} <= values
    assert not any(v.startswith("::") for v in values)


def test_a_name_from_the_global_scope_is_looked_up_as_one():
    """The analysis folds `::ns::kVec` (a constant spelled from the global scope) as it folds
    `kVec`; `a::b` and `C<T>::x` stay nested names, never looked up from the global scope."""
    table = {"::lib::sub::kVec": "4", "kVec": "8", "x": "X"}
    assert substitute("::lib::sub::kVec * 2", table.get) == "4*2"
    assert substitute("kVec + ::lib::sub::kVec", table.get) == "8+4"
    assert substitute("C<T>::x", table.get) == "C<T>::x"
    assert substitute("a::x", table.get) == "a::x"


@pytest.mark.slow
@pytest.mark.skipif(any(shutil.which(t) is None for t in ("nvcc", "cmake", "ninja")),
                    reason="needs nvcc, cmake and ninja")
def test_patched_scopelib_builds(tmp_path):
    import subprocess

    from codemod.apply.command import compute
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _nvrtc_root

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scopelib" / "input", root)
    write_all(root, compute(root, str(RULE))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           "-DCMAKE_BUILD_TYPE=Release"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DSCOPELIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


@pytest.mark.parametrize("ops_first", [True, False])
def test_a_function_argument_declared_only_where_a_caller_includes_it_reaches_the_program(tmp_path, capsys,
                                                                                        ops_first):
    """`fp::detail::square` declared in quant/ops.cuh, which only the unit includes; the launch is in
    quant/launch.cuh (not including it): the NVRTC program includes ops.cuh, found through the
    includes of the unit instantiating the kernel, and the precheck compiles the name expression.
    ops.cuh's section spells `&...::square` in either include order (kernels.h is reached first
    through the kernel's header's section, before ops.cuh)."""
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "scopelib" / "input", root)
    kernels = root / "quant" / "kernels.cuh"
    square = "__device__ inline float square(float x) { return x * x; }\n"
    text = kernels.read_text()
    assert text.count(square) == 1
    kernels.write_text(text.replace(square, ""))
    (root / "quant" / "ops.cuh").write_text(
        "// A device function the kernel's header does not declare.\n#ifndef SCOPELIB_QUANT_OPS_CUH_\n"
        "#define SCOPELIB_QUANT_OPS_CUH_\n\nnamespace scopelib {\nnamespace quant {\nnamespace fp {\n"
        f"namespace detail {{\n\n{square}\n}}  // namespace detail\n}}  // namespace fp\n}}  // namespace quant\n"
        "}  // namespace scopelib\n\n#endif  // SCOPELIB_QUANT_OPS_CUH_\n")
    unit = root / "quant" / "quant.cu"
    text = unit.read_text()
    start = text.index("constexpr int kThreads")
    end = text.index("namespace quant {")
    head = text[start:end]
    start2 = text.index("// A launcher of the outer namespace")
    end2 = text.index("namespace quant {\nnamespace sq {")
    launcher = text[start2:end2]
    (root / "quant" / "launch.cuh").write_text(
        "// The outer launcher, in a header that does not include ops.cuh.\n#ifndef SCOPELIB_QUANT_LAUNCH_CUH_\n"
        "#define SCOPELIB_QUANT_LAUNCH_CUH_\n\n#include \"../common.h\"\n#include \"kernels.cuh\"\n\n"
        f"namespace scopelib {{\n\n{head}{launcher}}}  // namespace scopelib\n\n#endif  // SCOPELIB_QUANT_LAUNCH_CUH_\n")
    text = text.replace(launcher, "").replace(head, "")
    order = '#include "ops.cuh"\n#include "launch.cuh"\n' if ops_first else '#include "launch.cuh"\n#include "ops.cuh"\n'
    text = text.replace('#include "kernels.cuh"\n', '#include "kernels.cuh"\n' + order)
    unit.write_text(text)
    rc = main(["apply", "--target", str(RULE), str(root), "--diff", str(tmp_path / "p.diff"), "-q"])
    assert rc == 0, capsys.readouterr().err
    patch = (tmp_path / "p.diff").read_text()
    # kernels.h cannot spell `&...::square`: units reach kernels.h first through the section of
    # kernels.cuh, the kernel's header, which they include before ops.cuh in either order (the
    # precheck refused this before the sections); ops.cuh's section does, included at its end
    spelling = "SCOPELIB_RTC_SPELLING(fn_arg, &::scopelib::quant::fp::detail::square)"
    section = patch[patch.index("+++ b/rtc/quant/kernels.h\n"):]
    section = section[:section.index("diff --git")]
    assert spelling not in section and '+#include "../rtc/quant/kernels_ops.h"' in patch
    assert spelling in patch[patch.index("+++ b/rtc/quant/kernels_ops.h\n"):]
    program = patch[patch.index("+++ b/rtc/quant/kernels.cu\n"):]
    program = program[:program.index("diff --git")] if "diff --git" in program else program
    assert '#include "quant/ops.cuh"' in program


def test_a_rule_value_names_an_enumerator_spelled_from_the_global_scope():
    """TE's fused router spells `TopkFuncType::Radix` in transformer_engine::fused_router, where the
    enum lives: the analysis writes `::transformer_engine::fused_router::TopkFuncType::Radix`, and
    the rule's key `TopkFuncType::Radix` (its trailing components) still gives the value."""
    from codemod.apply.plan.names import argument, named_value

    values = {"TopkFuncType::Radix": "1", "Radix": "7", "kVec": "4"}
    assert named_value("::te::router::TopkFuncType::Radix", values) == "1"   # the longest key first
    assert named_value("TopkFuncType::Radix", values) == "1"
    assert named_value("::te::ops::kVec", values) == "4"
    assert named_value("OtherType::Radix", values) is None                  # a key is never a suffix of a spelled name

    class Spec:
        names = {"values": values, "default_namespace": "te"}

        def type_sizes(self):
            return {}

        def aliases(self):
            return {}

    assert argument("value", "::te::router::TopkFuncType::Radix", Spec(), enum="te::router::TopkFuncType") == \
        "static_cast<::te::router::TopkFuncType>(1)"
