"""A rule's later change (`apply --update` with more kernels) that needs more std names in the
target's namespace grows the rule's own std-names and std-headers blocks instead of adding a second
block of each (emit/stdnames.additions)."""

from codemod.apply.emit import stdnames

HEADER = b"""#pragma once

namespace lib {
namespace detail {

template <class T, class U>
struct is_same { static constexpr bool value = false; };

}  // namespace detail
}  // namespace lib
"""


def _apply(data: bytes, edits: list[tuple[int, str]]) -> bytes:
    for at, text in sorted(edits, key=lambda e: e[0], reverse=True):
        data = data[:at] + text.encode() + data[at:]
    return data


def test_a_second_change_of_one_rule_grows_its_blocks():
    first = _apply(HEADER, stdnames.additions("h.h", HEADER, "lib::detail", {"remove_const"}, "act"))
    assert first.count(b"// std names NVRTC lacks") == 1 and first.count(b"// std headers of the names below") == 1
    second = _apply(first, stdnames.additions("h.h", first, "lib::detail", {"remove_const", "numeric_limits"}, "act"))
    text = second.decode()
    assert text.count("// std names NVRTC lacks") == 1 and text.count("// std headers of the names below") == 1
    block = text[text.index("// std names NVRTC lacks"):]
    block = block[:block.index("#endif")]
    ifdef, host = block.split("#else\n")
    assert "struct numeric_limits" in ifdef and "struct remove_const" in ifdef
    assert host.splitlines() == ["using std::remove_const;", "using std::numeric_limits;"]
    includes = text[text.index("// std headers"):text.index("#endif")]
    assert "#include <type_traits>" in includes and "#include <limits>" in includes


def test_another_rule_gets_its_own_blocks():
    first = _apply(HEADER, stdnames.additions("h.h", HEADER, "lib::detail", {"remove_const"}, "act"))
    second = _apply(first, stdnames.additions("h.h", first, "lib::detail", {"numeric_limits"}, "router"))
    assert second.count(b"// std names NVRTC lacks") == 2 and second.count(b"// std headers of the names below") == 2
