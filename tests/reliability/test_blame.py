"""Issue 16: a broken TU is charged its own errors and never hides another TU's facts; `apply`
leaves static every kernel whose analysis is incomplete (docs/diagnostics.md, CM0101)."""

from __future__ import annotations

import shutil

import pytest

from codemod.analysis.analyze import analyze
from codemod.frontend.parse import MEMBER_MARK, _member_marks
from codemod.rule import load_rule_file

from .conftest import ACTLIB_RULE, GOLDEN

# A constant whose evaluation needs a deeper recursive instantiation than the fast mode's
# -ftemplate-depth: clang raises its fatal depth error in the middle of the parse.
DEEP = """
template <int N> struct Depth { static constexpr int value = 1 + Depth<N - 1>::value; };
template <> struct Depth<0> { static constexpr int value = 0; };
static_assert(Depth<40>::value == 40, "depth");
"""


@pytest.fixture
def broken(tmp_path):
    """actlib with every `;` of activation/relu.cu removed."""
    lib = tmp_path / "lib"
    shutil.copytree(GOLDEN / "actlib" / "input", lib)
    relu = lib / "activation" / "relu.cu"
    relu.write_text(relu.read_text().replace(";", ""))
    return lib


def _tus(a):
    return {t.file: t for t in a.translation_units}


def test_broken_tu_charged_its_own_errors_after_a_fatal_error(broken):
    # gelu.cu comes first in the shared parse of activation/*: its fatal error used to silence
    # relu.cu's errors (reported clean) and stop the instantiations of swiglu.cu (no kernels).
    (broken / "activation" / "gelu.cu").write_text((broken / "activation" / "gelu.cu").read_text() + DEEP)
    a = analyze(broken, [load_rule_file(ACTLIB_RULE)])
    tus = _tus(a)
    assert tus["activation/relu.cu"].errors == 2
    errors = [d for d in a.diagnostics if d.severity == "error"]
    assert {d.file for d in errors} == {"activation/relu.cu"}
    assert all(t.errors == 0 for f, t in tus.items() if f != "activation/relu.cu")
    assert tus["activation/swiglu.cu"].instantiations == 99 and tus["activation/gelu_dbias.cu"].instantiations == 9


def test_broken_tu_charged_its_own_errors(broken):
    a = analyze(broken, [load_rule_file(ACTLIB_RULE)])
    errors = [d for d in a.diagnostics if d.severity == "error"]
    assert [(d.file, d.line) for d in errors] == [("activation/relu.cu", 8), ("activation/relu.cu", 14)]
    assert _tus(a)["activation/swiglu.cu"].errors == 0


def test_member_marks():
    diags = [{"message": f"{MEMBER_MARK}0"}, {"message": "expected ';'"}, {"message": f"{MEMBER_MARK}1"}]
    kept, cut = _member_marks(diags, ["a.cu", "b.cu", "c.cu"])
    assert kept == [{"message": "expected ';'"}] and cut == "c.cu"
    assert _member_marks(diags[:1] + diags[2:], ["a.cu", "b.cu"])[1] is None


def test_apply_stops_on_a_parse_error_in_a_unit_it_migrates(cli, broken, tmp_path):
    """A unit of migrate.translation_units with parse errors may have lost instantiations: apply
    stops naming it and its first error, and writes nothing (it used to leave all 7 kernels static
    and exit 0 having migrated nothing; issue 33)."""
    diff = tmp_path / "m.diff"
    err = cli.fails("apply", broken, "--target", ACTLIB_RULE, "-q", "--no-precheck", "--diff", diff,
                    says=("activation/relu.cu", "parse error(s) in this translation unit the rule migrates",
                          "activation/relu.cu:8: expected ';' after namespace name", "nothing done"))
    assert "leave the unit out of migrate.translation_units" in err
    assert not diff.exists() and not (tmp_path / "m.diff.report.md").exists()
