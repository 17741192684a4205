"""The prelude's copies cannot drift (issue 15, acceptance 3): kernels.cpp holds a static_assert per
copied declaration that the embedded text of its header still contains it (copy_check.h.j2), so a
changed header stops the build. Compiled with the host C++ compiler. Kernels are not copied: their
signature exists once (issue 29)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from codemod.apply.emit.generate import render
from codemod.apply.emit.prelude_copies import COPY_HASH_BASE, copy_hash, grouped_checks

DECL = "template <typename T>\nstruct is_fp8 : std::false_type {};"
HEADER = f"// lib/common.h\nnamespace lib {{\nusing fp32 = float;\n\n{DECL}\n}}  // namespace lib\n"


def _string_header(name: str, text: str) -> str:
    """What the library's string-header mechanism (TE: make_string_header_from_file) writes."""
    return f'static constexpr char {name}[]\n  = R"__STRING_DELIM__({text})__STRING_DELIM__";\n'


def _compile(tmp_path, header_text: str) -> subprocess.CompletedProcess:
    length, h = copy_hash(DECL)
    holds = render("copy_holds.h.j2", copy_hash_base=COPY_HASH_BASE)       # rtc_stubs.h's
    check = "namespace lib::stubs {\n" + holds + "}\n" + render(
        "copy_check.h.j2", namespace="lib::rtc", holds="::lib::stubs::holds", copy_checks=grouped_checks([
        dict(file="common.h", symbol="string_code_common_h", length=length, hash=h, name="is_fp8",
             what="what rtc/prelude/common.h copies", copy="rtc/prelude/common.h")]))
    src = tmp_path / "check.cpp"
    src.write_text(_string_header("string_code_common_h", header_text) + check + "int main() { return 0; }\n")
    return subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-include", "initializer_list", str(src)],
                          capture_output=True, text=True)


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++")
def test_an_unchanged_copy_compiles_and_a_changed_header_stops_the_build(tmp_path):
    assert _compile(tmp_path, HEADER).returncode == 0
    assert _compile(tmp_path, "// moved to the end\n" + HEADER).returncode == 0       # elsewhere in it: fine
    r = _compile(tmp_path, HEADER.replace("std::false_type", "std::true_type"))
    assert r.returncode != 0
    assert "common.h changed is_fp8: update rtc/prelude/common.h" in r.stderr
    assert _compile(tmp_path, "#").returncode != 0                                       # shorter than the copy
    # the analysis' stub of a string header CMake has not made yet is an empty string: let through
    assert _compile(tmp_path, "").returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_kernel_parameter_edit_needs_no_regeneration(tmp_path):
    """Each kernel's signature exists once, in its header: the stubs take the launcher type from
    the kernel (`decltype`, in the section its header includes after its kernels), and no kernel is
    declared again nor checked by a hash. A parameter-type edit in the header builds as the
    static kernel would (an argument converts), or fails to compile naming the kernel (one that
    cannot); nothing asks for a regeneration."""
    from .patched_actlib import nvrtc_flags, patch_actlib

    root, _, _ = patch_actlib(tmp_path)
    stubs = (root / "rtc/activation/kernels.h").read_text()
    assert "__global__" not in stubs and "holds(" not in (root / "rtc/activation/kernels.cpp").read_text()
    header = root / "util/vectorized_pointwise.h"
    original = header.read_text()
    old = "ComputeType *amax, ComputeType *scale_inv, Param p, size_t n) {"
    assert original.count(old) == 1     # unary_kernel's

    def build() -> subprocess.CompletedProcess:
        return subprocess.run(["nvcc", "-std=c++17", "-arch=sm_90", "-I", str(root), "-I", str(root / "include"),
                               *nvrtc_flags(tmp_path), "-DACTLIB_BUILD_LEGACY_STATIC_ACTIVATION=0", "-c", str(root / "activation/gelu.cu"),
                               "-o", str(tmp_path / "gelu.o")], capture_output=True, text=True, timeout=600)

    r = build()
    assert r.returncode == 0, r.stderr[-3000:]
    header.write_text(original.replace(old, old.replace("size_t n)", "long long n)")))
    r = build()
    assert r.returncode == 0, r.stderr[-3000:]         # size_t converts to the new type
    # a parameter the launch sites do not pass (the body does not use it: only the stub can fail)
    header.write_text(original.replace(old, old.replace("size_t n)", "size_t n, int extra)")))
    r = build()
    assert r.returncode != 0
    assert "unary_kernel" in r.stderr, r.stderr[-3000:]


def test_spellings_stringized_as_generated():
    """kernels.h spells each template argument once, through `#__VA_ARGS__`: a formatter line break
    between two tokens that had no blank would change the stringized spelling, so apply then
    keeps the block out of clang-format's reach (generate._spellings_kept)."""
    from codemod.apply.emit.generate import _spellings_kept

    kept = ("LIB_RTC_SPELLING(type_arg, __half)\nLIB_RTC_SPELLING(\n    type_arg,\n"
            "    ::lib::Traits<__nv_bfloat16, float,\n                  float>)\n")
    names = {"__half", "::lib::Traits<__nv_bfloat16, float, float>"}
    assert _spellings_kept(kept, "LIB_RTC_SPELLING", names)
    assert not _spellings_kept(kept.replace("Traits<__nv", "Traits<\n    __nv"), "LIB_RTC_SPELLING", names)
    assert not _spellings_kept(kept, "LIB_RTC_SPELLING", names | {"float"})


def test_many_copies_of_one_header_are_split_over_several_assertions():
    """gcc stops a constant evaluation after 2^25 operations: TE's common.h with 12 prelude copies
    in one static_assert failed to compile (kernels.cpp). At most six copies per assertion."""
    checks = [dict(file="common.h", symbol="string_code_common_h", length=10, hash=i, name=f"n{i}",
                   what="prelude declarations", copy="rtc/prelude/common.h") for i in range(13)]
    groups = grouped_checks(checks)
    assert [len(g["copies"]) for g in groups] == [6, 6, 1]
    assert [c["hash"] for g in groups for c in g["copies"]] == list(range(13))
    assert groups[2]["message"] == "common.h changed n12: update rtc/prelude/common.h"
