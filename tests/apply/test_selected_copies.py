"""A partial migration (--only) copies into the prelude only what its programs spell (issue 15,
acceptance 7: the first pull request of a rule carried every prelude copy of the rule)."""

from __future__ import annotations

from types import SimpleNamespace

from codemod.apply.emit.prelude_copies import replaced_declarations, selected_copies

COMMON = """#ifndef COMMON_H_
#define COMMON_H_
#include <string>
#define LIB_DIVUP(a, b) (((a) + (b) - 1) / (b))
#define LIB_FP4_SUPPORTED (CUDA_VERSION >= 12080)
struct Base { int n; };
struct FwdParams : Base { float *x; };
struct BwdParams : Base { float *dx; };
enum class Mode { kA, kB };
#if LIB_FP4_SUPPORTED
struct Fp4Tag { int v; };
#endif
std::string host_only_name();
#endif
"""


def _case(tmp_path, headers: dict[str, str], axes: list[str] = ()):
    (tmp_path / "common.h").write_text(COMMON)
    for name, text in headers.items():
        (tmp_path / name).write_text(text)
    plan = SimpleNamespace(kernels=[SimpleNamespace(variants=[SimpleNamespace(axes={"T": a}) for a in axes])],
                           extractions={})
    cs = SimpleNamespace(new_files={}, notes=[])
    names = ["LIB_DIVUP", "LIB_FP4_SUPPORTED", "Base", "FwdParams", "BwdParams", "Mode", "Fp4Tag"]
    shipped = {h: h for h in headers} | {"common.h": "common.h", "rtc/gone.h": "rtc/gone.h"}
    declared = replaced_declarations(tmp_path, ["common.h"], names)
    return selected_copies(tmp_path, plan, shipped, names, ["common.h"], declared, cs), cs


def test_only_the_names_the_programs_spell_and_what_those_copies_spell(tmp_path):
    got, cs = _case(tmp_path, {"fwd.cuh": "template <int N> __global__ void fwd(FwdParams p) {}\n"})
    assert got == ["Base", "FwdParams"]     # FwdParams derives from Base; the replaced header itself is not read
    assert "BwdParams" in cs.notes[0] and "LIB_DIVUP" in cs.notes[0]


def test_a_conditioned_copy_brings_its_condition_and_a_name_expression_counts(tmp_path):
    got, _ = _case(tmp_path, {"q.cuh": "__global__ void q(int n) { int b = LIB_DIVUP(n, 4); Fp4Tag t; }\n"},
                   axes=["Mode::kB"])
    assert got == ["LIB_DIVUP", "LIB_FP4_SUPPORTED", "Mode", "Fp4Tag"]


def test_a_name_inside_a_longer_identifier_does_not_count(tmp_path):
    got, _ = _case(tmp_path, {"k.cuh": "struct FwdParamsLike { int BaseCount; };\nint Mode_x;\n"})
    assert got == []
