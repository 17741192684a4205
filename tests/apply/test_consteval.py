"""Canonical spellings of constant template arguments (codemod/apply/plan/consteval.py)."""

import pytest

from codemod.apply.plan.consteval import NotConstant, evaluate, function_choice

SIZES = {"__half": 2, "float": 4}


@pytest.mark.parametrize("text,value", [
    ("32/sizeof(__half)", 16), ("8/sizeof(float)", 2), ("1", 1), ("true", True),
    ("false&&(!false)&&(!true)?128:64", 64), ("true&&(!false)&&(!false)?128:64", 128),
    ("(2+3)*4%7", 6), ("!(1==2)||false", True),
    # scaled_activation's `nvec = 32 / std::max(...)`: folded (once "no canonical spelling")
    ("32 / std::max(sizeof(__half), sizeof(float))", 8), ("std::max(1, 2)", 2), ("-7/2", -3),
])
def test_evaluate(text, value):
    assert evaluate(text, SIZES) == value


@pytest.mark.parametrize("text", ["sizeof(Foo)", "kVec", "1/0", "(1", "std::max(kVec, 2)"])
def test_not_constant(text):
    with pytest.raises(NotConstant):
        evaluate(text, SIZES)


def test_function_choice():
    assert function_choice("(dgelu<float, float>==nullptr)?detail::identity:dgelu<float, float>") == \
        "dgelu<float, float>"
    assert function_choice("gelu<float, float>") == "gelu<float, float>"
    # a null `f` chooses the first branch (TE's cast entry points: OP = nullptr -> detail::identity)
    assert function_choice("(nullptr==nullptr)?detail::identity:nullptr") == "detail::identity"
    assert function_choice("(nullptr == nullptr) ? a : b") == "a"
    # parenthesized whole, as the analysis substitutes an expression with an operator into another
    assert function_choice("((dgelu<float, float>==nullptr)?detail::identity:dgelu<float, float>)") == \
        "dgelu<float, float>"
    assert function_choice("(a)?b:(c)") == "(a)?b:(c)"
