"""std names without `namespace std` (codemod/apply/emit/stdnames.py, rule key kernel_strings.std_names)."""

from __future__ import annotations

import re

import pytest

from codemod.apply.base import source
from codemod.apply.emit import stdnames
from codemod.errors import ApplyError

HEADER = b"""#ifndef LIB_UTILS_H_
#define LIB_UTILS_H_
#ifdef __CUDACC_RTC__
using uint32_t = unsigned int;
#endif

// The library's own traits.
namespace lib {
namespace detail {
template <class T, class U>
struct is_same { static constexpr bool value = false; };
template <class T>
struct is_same<T, T> { static constexpr bool value = true; };
}  // namespace detail
}  // namespace lib
#endif
"""

KERNELS = """namespace lib {
// std::min in a comment stays
template <typename T>
__device__ T f(T a, T b) {
  static_assert(std::is_same<T, float>::value, "std::max in a string stays");
  return std::min(std::max(a, b), ::std::max(b, a));
}
namespace inner {
__device__ int g() { return std::is_same<int, int>::value; }
}  // namespace inner
template <typename T>
void host_only(T x) { std::min(x, x); }
}  // namespace lib
"""


def test_uses_are_respelled_in_the_target_namespace():
    data = KERNELS.encode()
    text, names = stdnames.respell(KERNELS, "lib::detail", skip=source.host_only_functions(data))
    assert names == {"is_same", "min", "max"}
    assert "static_assert(detail::is_same<T, float>::value" in text
    assert "return detail::min(detail::max(a, b), ::lib::detail::max(b, a));" in text
    assert "return lib::detail::is_same<int, int>::value;" in text        # inside lib::inner
    assert "// std::min in a comment stays" in text and '"std::max in a string stays"' in text
    assert "void host_only(T x) { std::min(x, x); }" in text              # host-only: unchanged


def _added(header: bytes, target: str, names: set[str]) -> tuple[str, list[str]]:
    """The header with stdnames.additions inserted, and the names defined under NVRTC."""
    out = header.decode()
    for at, text in sorted(stdnames.additions("utils.h", header, target, names), reverse=True):
        out = out[:at] + text + out[at:]
    return out, stdnames.defined_names(names, header, target)


def test_missing_definitions_go_into_the_namespace_block():
    out, defined = _added(HEADER, "lib::detail", {"is_same", "min", "true_type"})
    assert sorted(defined) == ["integral_constant", "min", "true_type"]    # is_same: the library's own
    assert defined.index("integral_constant") < defined.index("true_type")
    assert out.index("using true_type") < out.index("}  // namespace detail")
    assert "namespace std" not in out
    assert out.index("namespace detail {") < out.index("&min(") < out.index("}  // namespace detail")


def test_the_library_build_takes_the_standard_librarys_names():
    """Under NVRTC codemod's definitions; in the library's own build (nvcc, g++) the respelled
    code names the standard library's (using-declarations, their headers included at file scope),
    so it means what it meant before the migration, and a header that declares these names for
    both builds (a moved definition's host branch) does not clash with them."""
    out, _ = _added(HEADER, "lib::detail", {"is_same", "min", "true_type"})
    rtc = out.index("// std names NVRTC lacks, for device code")
    assert rtc < out.index("#else\nusing std::min;\nusing std::true_type;\n#endif  // __CUDACC_RTC__") \
        < out.index("}  // namespace detail")
    assert "using std::is_same;" not in out                                # the library's own, both builds
    includes = out.index("#ifndef __CUDACC_RTC__\n// std headers of the names below")
    assert includes < out.index("// The library's own traits.") < rtc
    assert "#include <algorithm>\n#include <type_traits>\n#endif" in out
    again, defined = _added(out.encode(), "lib::detail", {"min", "true_type"})
    assert again == out and defined == []                                  # a second rule adds nothing


def test_integers_defined_globally_under_nvrtc_before_the_commented_block():
    ints = stdnames.integer_names([b"int32_t a; uint32_t b; std::int64_t c;"])
    assert ints == {"int32_t", "uint32_t"}
    at, text, defined = stdnames.integer_additions("utils.h", HEADER, "lib::detail", ints)
    assert defined == ["int32_t"]                                          # uint32_t: the library has it
    out = HEADER[:at].decode() + text + HEADER[at:].decode()
    assert out.index("using int32_t = int;") < out.index("// The library's own traits.")


def test_a_missing_namespace_is_opened_in_its_parent_else_refused():
    out, _ = _added(HEADER, "lib::other", {"min"})
    assert "namespace other {" in out and out.index("namespace other {") < out.index("}  // namespace lib")
    with pytest.raises(ApplyError, match="no `namespace` block of elsewhere"):
        stdnames.additions("utils.h", HEADER, "elsewhere::detail", {"min"})


def test_a_new_namespace_comes_before_the_headers_own_uses():
    """TE 6377ca161's utils.cuh: `std::is_same_v` used in a function of `namespace
    transformer_engine` long before the block ends; respelled `detail::is_same_v`, the new
    `namespace detail` must precede it (at the block's end nvcc failed: no member is_same_v)."""
    header = (b"namespace lib {\n\nstruct early {};\n\ntemplate <typename T>\n__device__ bool f() {\n"
              b"  return std::is_same_v<T, float>;\n}\n\n}  // namespace lib\n")
    use = stdnames.uses(header)[0]
    ins = stdnames.additions("utils.h", header, "lib::detail", {"is_same_v"})
    at, text = ins[-1]
    assert at < use[0]
    edited = header[:use[0]] + stdnames.replacement("lib::detail", use[3], False, "is_same_v").encode() + header[use[1]:]
    out = edited.decode()
    for at, text in sorted(ins, reverse=True):
        out = out[:at] + text + out[at:]
    assert out.index("namespace detail {") < out.index("detail::is_same_v<T, float>")
    assert out.index("namespace lib {") < out.index("namespace detail {")


def test_a_second_rule_adds_only_what_is_missing():
    """Two rules applied one after the other to one tree: the second must not redefine min."""
    once, _ = _added(HEADER, "lib::detail", {"min"})
    twice, defined = _added(once.encode(), "lib::detail", {"min", "max", "true_type"})
    assert sorted(defined) == ["integral_constant", "max", "true_type"]     # min came with the first
    assert twice.count("&min(") == 1 and twice.count("using std::min;") == 1


def test_std_integers_become_the_global_ones():
    text, names = stdnames.respell("namespace lib {\nusing std::int32_t;\n__device__ std::uint8_t f();\n}\n",
                                   "lib::detail")
    assert "using ::int32_t;" in text and "__device__ ::uint8_t f();" in text
    assert stdnames.additions("utils.h", HEADER, "lib::detail", names) == []    # nothing for the namespace
    assert stdnames.defined_names(names, HEADER, "lib::detail") == []


def test_a_member_function_named_min_is_not_a_definition_of_min():
    once, _ = _added(HEADER, "lib::detail", {"numeric_limits"})
    assert "static constexpr float min()" in once
    _, defined = _added(once.encode(), "lib::detail", {"min", "numeric_limits"})
    assert defined == ["min"]


def test_integers_the_prelude_copies_spell_are_collected():
    """A prelude copy spelling a <cstdint> name (TE's align_up(char *, uintptr_t)) needs the
    std_names header to define it under NVRTC, like a shipped header's use would: the copies'
    integers are collected with their std names (the prelude is generated, so the scan of the
    shipped library headers does not see it; TE's cast_fp8_gated_kernel and the NVFP4 kernels
    failed NVRTC on `uintptr_t` before)."""
    from codemod.apply.emit.prelude_copies import respell_copies

    groups = [{"namespace": "lib", "texts": ["__device__ inline char *align_up(char *p, uintptr_t a) {\n"
                                             "  return p + (std::max(a, a) - reinterpret_cast<uintptr_t>(p) % a);\n}"]}]
    used, ints = set(), set()
    out = respell_copies(groups, {"namespace": "lib::detail", "header": "utils.h"}, used, ints)
    assert used == {"max"} and ints == {"uintptr_t"}
    assert "detail::max(a, a)" in out[0]["texts"][0] and "std::" not in out[0]["texts"][0]


def test_uses_below_the_parent_are_short_unless_a_namespace_in_between_declares_the_name(tmp_path):
    """`detail::X` from `lib::a::b` finds `lib::detail` unless `lib::a` or `lib::a::b` declares a
    `detail` of its own (TE: `transformer_engine::dispatch::fp8::detail`): the library is scanned for
    such namespaces, and uses below one of them keep the full spelling."""
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "fp8.cuh").write_text("namespace lib {\nnamespace a {\nnamespace fp8 {\nnamespace detail {\n"
                                            "int helper;\n}\n}  // namespace fp8\n}  // namespace a\n}  // namespace lib\n")
    (tmp_path / "u.h").write_text("namespace lib::detail { int ok; }\nnamespace other::detail {}\n")
    clashes = stdnames.namespace_clashes(tmp_path, "lib::detail")
    assert clashes == {("lib", "a", "fp8"), ("other",)}
    assert stdnames.replacement("lib::detail", ["lib"], False, "min", clashes) == "detail::min"
    assert stdnames.replacement("lib::detail", ["lib", "a", "mxfp8"], False, "min", clashes) == "detail::min"
    assert stdnames.replacement("lib::detail", ["lib", "a", "fp8", "k"], False, "min", clashes) == "lib::detail::min"
    assert stdnames.replacement("lib::detail", ["lib", "a", "mxfp8"], True, "min", clashes) == "::lib::detail::min"
    assert stdnames.replacement("lib::detail", ["lib", "a", "mxfp8"], False, "min") == "lib::detail::min"  # no scan
    # a using-directive naming such a namespace could bring its `detail` anywhere: every use in full
    (tmp_path / "v.cuh").write_text("namespace lib::a::mxfp8 { using namespace lib::a::fp8; }\n")
    assert stdnames.namespace_clashes(tmp_path, "lib::detail") is None
    assert stdnames.replacement("lib::detail", ["lib", "a", "mxfp8"], False, "min", None) == "lib::detail::min"


def test_code_nvrtc_never_sees_keeps_its_std_names():
    """The library's own branch of a std-names block (`#else using std::min;`) and any
    `#ifndef __CUDACC_RTC__` code are not respelled: a later rule respelling `using std::min;` into
    `using lib::detail::min;` made TE's utils.cuh name itself (the fused_router rule stacked on the
    activation rule: 'no member named enable_if_t in namespace transformer_engine::detail')."""
    data = (b"namespace lib {\n#ifdef __CUDACC_RTC__\n__device__ int a = std::min(1, 2);\n#else\nusing std::min;\n"
            b"#endif  // __CUDACC_RTC__\n#if !defined(__CUDACC_RTC__)\nusing std::max;\n#endif\n"
            b"__device__ int b = std::max(1, 2);\n}\n")
    text, names = stdnames.respell(data.decode(), "lib::detail")
    assert "using std::min;" in text and "using std::max;" in text
    assert "a = detail::min(1, 2)" in text and "b = detail::max(1, 2)" in text and names == {"min", "max"}


def test_std_header_blocks_keep_their_order_with_another_rules_integer_block():
    """Rule A adds its std-headers block and its <cstdint> block; rule B, applied after, adds its
    std-headers block before A's <cstdint> block, where a regeneration of A (B later) puts it too:
    otherwise `--check` of A found utils.cuh pending (TE: fused_router, then scaled_activation)."""
    def add(data: bytes, names: set[str], rule: str, later=frozenset()) -> bytes:
        out = data.decode()
        ins = stdnames.additions("utils.h", data, "lib::detail", names, rule, later)
        at, text, _ = stdnames.integer_additions("utils.h", data, "lib::detail", {"int32_t"}, rule, later)
        if at >= 0:
            ins.append((at, text))
        # as apply_edits: insertions at one offset in the order they were made
        for _, (a, t) in sorted(enumerate(ins), key=lambda x: (x[1][0], x[0]), reverse=True):
            out = out[:a] + t + out[a:]
        return out.encode()

    a = add(HEADER, {"true_type"}, "a")
    both = add(a, {"min"}, "b").decode()
    assert both.index("(NVRTC migration of the b kernels).\n#include <algorithm>") \
        < both.index("// <cstdint> names NVRTC lacks (NVRTC migration of the a kernels)")
    # A regenerated with B after it, on the tree without A's blocks, gives the same text
    without_a = both
    for block in re.findall(r"#ifn?def __CUDACC_RTC__\n// [^\n]*\(NVRTC migration of the a kernels\)\.\n.*?"
                            r"#endif  // __CUDACC_RTC__\n\n", both, re.S):
        without_a = without_a.replace(block, "", 1)
    without_a = re.sub(r"\n// std names NVRTC lacks, for device code \(NVRTC migration of the a kernels\)\.\n.*?"
                       r"#endif  // __CUDACC_RTC__\n\n", "", without_a, flags=re.S)
    assert "migration of the a kernels" not in without_a
    assert add(without_a.encode(), {"true_type"}, "a", frozenset({"b"})).decode() == both
