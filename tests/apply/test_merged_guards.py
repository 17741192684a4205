"""Edits applied to a library file (emit/texts.apply_edits): two inserted blocks hidden from NVRTC
that meet become one; the library's own guards, and inserted ones with code between, stay. And
the comment wrapper leaves the target's own (moved) comment lines as they are."""

from codemod.apply.base.changeset import ChangeSet, Edit, hidden_from_nvrtc
from codemod.apply.emit.style import wrap_comments
from codemod.apply.emit.texts import apply_edits

LIB = """\
__global__ void k(float *x) {}

void launch(float *x) { k<<<1, 1>>>(x); }

#ifndef __CUDACC_RTC__
void other();
#endif  // __CUDACC_RTC__

#ifndef __CUDACC_RTC__
void theirs();
#endif  // __CUDACC_RTC__
"""


def test_inserted_blocks_that_meet_merge(tmp_path):
    (tmp_path / "k.cuh").write_text(LIB)
    at = LIB.index("void launch")
    end = LIB.index("\n", at) + 1
    cs = ChangeSet(edits=[Edit("k.cuh", at, at, hidden_from_nvrtc('#include "stubs.h"\n') + "\n", "section"),
                          Edit("k.cuh", at, at, "#ifndef __CUDACC_RTC__\n", "host code"),
                          Edit("k.cuh", end, end, "#endif  // __CUDACC_RTC__\n", "host code")])
    new = apply_edits(tmp_path, cs)["k.cuh"][1]
    assert ('#ifndef __CUDACC_RTC__\n#include "stubs.h"\n\nvoid launch(float *x) { k<<<1, 1>>>(x); }\n'
            '#endif  // __CUDACC_RTC__\n') in new
    assert new.count("#ifndef __CUDACC_RTC__") == 3          # the merged one and the library's two
    assert LIB[LIB.index("#ifndef"):] in new                   # the library's own that meet stay as they are


def test_blocks_with_code_between_stay_apart(tmp_path):
    (tmp_path / "k.cuh").write_text(LIB)
    at, later = LIB.index("void launch"), LIB.index("\n#ifndef") + 1
    cs = ChangeSet(edits=[Edit("k.cuh", at, at, hidden_from_nvrtc('#include "stubs.h"\n'), "section"),
                          Edit("k.cuh", later, later, hidden_from_nvrtc("void mine();\n"), "host code")])
    new = apply_edits(tmp_path, cs)["k.cuh"][1]
    assert new.count("#ifndef __CUDACC_RTC__") == 4


def test_wrap_comments_leaves_the_targets_lines():
    long = "  // " + "word " * 25 + "end"
    ours = "  // " + "mine " * 25 + "end"
    out = wrap_comments(f"{long}\n{ours}\n", 100, frozenset({long.strip()}))
    assert out.startswith(long + "\n")
    assert all(len(line) <= 100 for line in out.splitlines()[1:]) and len(out.splitlines()) == 3


BLOCK = b"""k();
// The NVRTC host stubs of the kernels above.
#ifndef __CUDACC_RTC__
}  // namespace a
#include "x.h"
namespace a {
#endif  // __CUDACC_RTC__

#ifndef __CUDACC_RTC__
void host();
#endif  // __CUDACC_RTC__
"""


def test_a_section_include_is_read_as_blank_merged_or_not():
    """Another rule reads a header past a section's include (source.without_stub_blocks): the
    block's namespace closings and reopenings are blanked, offsets kept; merged with the host
    code's guard, its #ifndef stays (its #endif follows the host code, which is read as it is)."""
    from codemod.apply.base import source

    merged = BLOCK.replace(b"#endif  // __CUDACC_RTC__\n\n#ifndef __CUDACC_RTC__\n", b"\n")
    for data in (BLOCK, merged):
        out = source.without_stub_blocks(data)
        assert len(out) == len(data) and b"namespace" not in out and b"x.h" not in out
        assert b"void host();\n#endif  // __CUDACC_RTC__\n" in out
        assert out.count(b"#ifndef __CUDACC_RTC__") == out.count(b"#endif")
