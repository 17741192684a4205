"""Issue 33: the TU walk is linear in TU size. Correctness of the two lookups that replaced
quadratic ones (the timing is bench/analyze_functions.py, not a test): macro invocations found
from one index of the preprocessing record give what `clang_getCursor` at each position gave, and
a launch's `<<<` is looked for within its statement."""

from __future__ import annotations

from pathlib import Path

import clang.cindex as ci

from codemod.frontend.clang_index import TUIndexer, parse_tu
from codemod.frontend.cursors import CK
from codemod.frontend.recognizers.launches import chevron_texts
from codemod.frontend.toolchain import make_toolchain

SOURCE = """\
#define LAUNCH(K, P) K<float><<<1, 1>>>(P)
#define TWICE(F) F(1); F(2)
#define CALL(X) use(X)
template <typename T> __global__ void k(T *p) { p[0] = 1; }
void use(int) {}
extern "C" {
void api_0(float *p) { LAUNCH(k, p); }
void api_1(float *p) { k<float><<<2, 3, 0>>>(p); }
void api_2(float *p) { TWICE(CALL); CALL(CALL_ARG_NONE_0 + 0); }
void api_3(float *p) { LAUNCH(k, p); k<float><<<4, 5>>>(p); }
}
struct S { void m(float *p) { LAUNCH(k, p); } };
"""


def _legacy(loc, tu, fname, off):
    """The lookup the index replaced: clang_getCursor at the position."""
    c = ci.Cursor.from_location(tu, ci.SourceLocation.from_offset(tu, tu.get_file(fname), off))
    if c is None or c.kind != CK.MACRO_INSTANTIATION:
        return None
    mf, _, _, moff = loc.file_loc(c.location)
    return (c.spelling, moff) if moff == off else None


def test_macro_index_equals_clang_getcursor(tmp_path: Path):
    (tmp_path / "t.cu").write_text(SOURCE.replace("CALL_ARG_NONE_0", "0"))
    tu, _ = parse_tu(tmp_path / "t.cu", tmp_path, make_toolchain([]).base_flags())
    ix = TUIndexer(tu, str(tmp_path))
    ix.run()
    name = str(tmp_path / "t.cu")
    text = (tmp_path / "t.cu").read_text()
    checked = found = 0
    for off in range(len(text)):  # every byte: the index and clang_getCursor agree everywhere
        got = ix.loc._macro_instantiation(name, off)
        want = _legacy(ix.loc, tu, name, off)
        assert (None if got is None else (got["name"], got["offset"])) == want, (off, got, want)
        checked += 1
        found += got is not None
    assert checked == len(text) and found >= 6   # LAUNCH x3, TWICE, CALL x2 (and the nested CALLs)


def test_walk_reads_launches_in_an_extern_c_block(tmp_path: Path):
    (tmp_path / "t.cu").write_text(SOURCE.replace("CALL_ARG_NONE_0", "0"))
    tu, _ = parse_tu(tmp_path / "t.cu", tmp_path, make_toolchain([]).base_flags())
    facts = TUIndexer(tu, str(tmp_path)).run()
    by_name = {f["name"]: f for f in facts["functions"].values()}
    assert {"api_0", "api_1", "api_2", "api_3", "m"} <= set(by_name)
    configs = sorted(tuple(s.get("config") or ()) for f in by_name.values() for s in f["sites"].values()
                     if s.get("api") == "<<<>>>")
    assert ("2", "3", "0") in configs and ("4", "5") in configs


def test_chevron_texts_within_the_statement():
    text = "#define L(K) K<<<1, 2>>>(p)\nvoid f() { L(k); }\nvoid g() { k<<<3, 4>>>(q, r); }\n"
    assert chevron_texts(text, text.index("L(k)")) is None           # its `<<<` is in the #define
    assert chevron_texts(text, text.index("k<<<3")) == (["3", "4"], ["q", "r"])
    assert chevron_texts("k<<<1,2>>>(a);" + "x" * 10, 0) == (["1", "2"], ["a"])
    assert chevron_texts("f(); k<<<1>>>(a);", 0) is None             # a `;` before it: another statement
