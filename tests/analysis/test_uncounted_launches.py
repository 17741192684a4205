"""A family whose launches are found but whose instantiations are not is an error naming the
launch (CM1006, exit 1), never "0 instantiations" with exit 0: the launcher is a template
defined in a header and instantiated only in a form the analysis cannot read (its address taken
at namespace scope)."""

from pathlib import Path

from codemod.analysis.analyze import analyze
from codemod.cli import main

FILES = {
    "launch.cuh": "#pragma once\n"
                  "template <typename T, bool kFlag> __global__ void scale_kernel(T *p, int n) { if (kFlag) p[0] = n; }\n"
                  "template <typename T> void launch_scale(T *p, int n, bool flag, cudaStream_t s) {\n"
                  "  if (flag) scale_kernel<T, true><<<1, 32, 0, s>>>(p, n);\n"
                  "  else scale_kernel<T, false><<<1, 32, 0, s>>>(p, n);\n"
                  "}\n",
    # the launcher is instantiated by taking its address at namespace scope: no recognizer reads it
    "scale_f32.cu": '#include "launch.cuh"\n'
                    "void (*const kScaleFloat)(float *, int, bool, cudaStream_t) = &launch_scale<float>;\n",
}


def _tree(root: Path) -> Path:
    for rel, text in FILES.items():
        (root / rel).write_text(text)
    return root


def test_launches_without_instantiations_are_an_error_naming_the_launch(tmp_path):
    a = analyze(_tree(tmp_path), [], use_cache=False)
    errs = [d for d in a.diagnostics if d.id == "CM1006"]
    assert [(d.severity, d.file, d.line) for d in errs] == [("error", "launch.cuh", 4)]
    assert "scale_kernel" in errs[0].message and "scale_f32.cu" in errs[0].message
    assert a.totals["errors"] == 1


def test_the_cli_exits_nonzero(tmp_path, capsys):
    assert main(["analyze", str(_tree(tmp_path)), "--no-cache"]) == 1
    assert "CM1006" in capsys.readouterr().out


def test_a_recognised_instantiation_list_is_counted(tmp_path):
    _tree(tmp_path)
    (tmp_path / "scale_f32.cu").write_text('#include "launch.cuh"\n'
                                           "template void launch_scale<float>(float *, int, bool, cudaStream_t);\n")
    a = analyze(tmp_path, [], use_cache=False)
    assert not [d for d in a.diagnostics if d.id == "CM1006"]
    assert {t.file: t.instantiations for t in a.translation_units} == {"scale_f32.cu": 2}


def test_an_instantiation_list_spelled_by_a_macro_is_counted(tmp_path):
    """bitsandbytes spells its lists with macros (`MAKE_kQuantize(half, 4096)` at namespace scope):
    the invocation is expanded (nested macros and object-like constants too) and read."""
    _tree(tmp_path)
    (tmp_path / "scale_f32.cu").write_text(
        '#include "launch.cuh"\n'
        "#define SCALE_TYPE_OF(T) T\n"
        "#define INSTANTIATE_SCALE(T) \\\n"
        "  template void launch_scale<SCALE_TYPE_OF(T)>(T *, int, bool, cudaStream_t);\n"
        "#define INSTANTIATE_ALL INSTANTIATE_SCALE(float) INSTANTIATE_SCALE(double)\n"
        "INSTANTIATE_ALL\n"
        "template <typename T> __global__ void fill_kernel(T *p) { p[0] = T(0); }\n"
        "#define MAKE_FILL(T) template __global__ void fill_kernel<T>(T *);\n"
        "MAKE_FILL(int)\n")
    a = analyze(tmp_path, [], use_cache=False)
    assert not [d for d in a.diagnostics if d.id == "CM1006"]
    assert {k.name: k.instantiations for k in a.kernels} == {"scale_kernel": 4, "fill_kernel": 1}
    assert sorted(e.name for e in a.entry_points) == ["fill_kernel<int>", "launch_scale<double>", "launch_scale<float>"]


def test_instantiation_arguments_are_spelled_as_launch_sites_spell_them(tmp_path):
    """`lib::Wrap` spelled qualified in an instantiation list and `Wrap` at a call are one
    instantiation (TE's NVTE_INSTANTIATE_ACTIVATION lists `transformer_engine::gelu<float, float>`,
    its launchers pass `gelu<fp32, fp32>`): a name of the outermost namespace is spelled bare, and
    `f<g<A>>`'s closing `>>` splits. Before, each was counted twice."""
    (tmp_path / "ops.cuh").write_text(
        "#pragma once\n"
        "namespace lib {\n"
        "template <typename T> struct Tag {};\n"
        "struct Wrap {};\n"
        "template <typename OP, typename P> __global__ void k(float *p) {}\n"
        "template <typename OP, typename P> void launch(float *p) { k<OP, P><<<1, 1>>>(p); }\n"
        "}  // namespace lib\n")
    (tmp_path / "a.cu").write_text(
        '#include "ops.cuh"\n'
        "namespace lib {\n"
        "void api(float *p) { launch<Wrap, Tag<int>>(p); }\n"
        "template void launch<lib::Wrap, lib::Tag<int>>(float *);\n"
        "}  // namespace lib\n"
        "template void lib::launch<::lib::Wrap, lib::Tag<double>>(float *);\n")
    a = analyze(tmp_path, [], use_cache=False)
    got = {tuple(v["args"]) for s in a.sites if s.kind == "launch" for v in s.variants}
    assert got == {("Wrap", "Tag<int>"), ("Wrap", "Tag<double>")}
    assert {k.name: k.instantiations for k in a.kernels} == {"k": 2}
