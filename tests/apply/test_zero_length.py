"""A member array that can be zero-length (`char pad[c ? n : 0]`, nvcc's GNU extension) in a class
template NVRTC compiles: apply specializes the class without it. The layout must not change (g++
compiles the original and the edited template side by side and compares sizes and offsets), and
NVRTC must accept the edited form where it rejects the original."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from codemod.apply.emit import zero_length
from codemod.apply.emit.generate import render

SOURCE = b"""\
struct none_t {};
template <bool C, typename T, typename F> struct pick { using type = T; };
template <typename T, typename F> struct pick<false, T, F> { using type = F; };
template <typename T, bool E>
using maybe_t = typename pick<E, T, none_t>::type;

template <typename A, typename B, bool Fused>
union pair_t {
  using b_t = maybe_t<B, Fused>;
  using a_t = A;
  struct {
    char _pad[sizeof(a_t) > sizeof(b_t) ? sizeof(a_t) - sizeof(b_t) : 0];
    b_t b;
  };
  a_t a;
};
"""

# (A, B, Fused): padding 12, 0 (equal sizes), 0 (B larger), 15 (B absent: none_t)
CASES = [("v16", "v4", "true"), ("v16", "v16", "true"), ("v4", "v16", "true"), ("v16", "v16", "false")]


def _edited(data: bytes) -> str:
    edits, skipped = zero_length.find(data)
    assert not skipped and len(edits) == 1
    e = edits[0]
    special = render("zero_length.h.j2", **e.special_ctx)
    return (data[:e.param_at] + e.param_text.encode() + data[e.param_at:e.special_at]
            + special.encode() + data[e.special_at:]).decode()


def test_found_with_the_flag_spelled_through_the_member_aliases():
    edits, skipped = zero_length.find(SOURCE)
    assert skipped == [] and [(e.class_name, e.field, e.line) for e in edits] == [("pair_t", "_pad", 7)]
    assert edits[0].param_text == (", bool HasNonEmpty_pad = ((sizeof(A) > sizeof(maybe_t<B, Fused>) ? "
                                   "sizeof(A) - sizeof(maybe_t<B, Fused>) : 0) != 0)")
    text = _edited(SOURCE)
    assert "union pair_t<A, B, Fused, false> {" in text
    special = text[text.index("union pair_t<A, B, Fused, false>"):]
    assert "_pad" not in special.split("{", 1)[1] and "b_t b;" in special


def test_an_edited_template_is_not_edited_again():
    assert zero_length.find(_edited(SOURCE).encode()) == ([], [])


def test_no_array_or_a_nonzero_array_is_left_alone():
    assert zero_length.find(b"template <int N> struct s { char a[N ? N : 1]; };") == ([], [])
    assert zero_length.find(b"template <int N> struct s { char a[N]; };") == ([], [])


def test_a_size_naming_a_data_member_is_skipped_with_the_reason():
    edits, skipped = zero_length.find(
        b"template <int N> struct s { static constexpr int k = N; char a[k > 1 ? k : 0]; int k2; };")
    assert edits == [] and [s.reason for s in skipped] == ["the size names a data member (k)"]


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_layout_is_unchanged(tmp_path):
    checks = "\n".join(
        f"using O{i} = orig::pair_t<{a}, {b}, {f}>; using E{i} = edit::pair_t<{a}, {b}, {f}>;\n"
        f"static_assert(sizeof(O{i}) == sizeof(E{i}) && alignof(O{i}) == alignof(E{i}), \"size\");\n"
        f"static_assert(offsetof(O{i}, b) == offsetof(E{i}, b) && offsetof(O{i}, a) == offsetof(E{i}, a), \"b\");"
        for i, (a, b, f) in enumerate(CASES))
    program = (
        "#include <cstddef>\nstruct alignas(16) v16 { char c[16]; };\nstruct alignas(4) v4 { char c[4]; };\n"
        f"namespace orig {{\n{SOURCE.decode()}}}\nnamespace edit {{\n{_edited(SOURCE)}}}\n{checks}\n"
        # the edited form picks the specialization exactly where the original array is empty
        "static_assert(sizeof(edit::pair_t<v16, v16, true>) == 16, \"\");\nint main() { return 0; }\n")
    src = tmp_path / "layout.cpp"
    src.write_text(program)
    run = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "-Wno-invalid-offsetof", str(src)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def _nvrtc():
    from codemod.verify import nvrtc
    try:
        return nvrtc.load()
    except nvrtc.NvrtcNotFound:
        pytest.skip("needs NVRTC (the nvidia-cuda-nvrtc wheel)")


@pytest.mark.parametrize("edited", [False, True])
def test_nvrtc_rejects_the_original_and_accepts_the_edit(edited):
    lib = _nvrtc()
    body = _edited(SOURCE) if edited else SOURCE.decode()
    program = ("struct alignas(16) v16 { char c[16]; };\n" + body +
               "template <typename T> __global__ void k(T *p) { pair_t<T, T, true> u; u.a = *p; *p = u.a; }\n")
    result = lib.compile(program, "zl.cu", options=["--std=c++17"], include_cuda=False, include_cccl=False,
                         name_expressions=["&k<v16>"])
    assert result.ok is edited, result.log
    if not edited:
        assert "greater than zero" in result.log
