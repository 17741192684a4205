from codemod.analysis.consteval import fold_text
from codemod.analysis.instantiate import eval_condition, expansions, strip_type
from codemod.frontend.source_text import normalize, read_macro_args, read_template_id, substitute


def test_read_template_id():
    assert read_template_id("ns::k<T, 4>  <<<g, b>>>(x)", 0) == ("ns::k", ["T", "4"], 11)
    assert read_template_id("f<a, g<b, c>>(x)", 0)[:2] == ("f", ["a", "g<b, c>"])
    assert read_template_id("kernel<<<1, 1>>>()", 0)[:2] == ("kernel", None)
    assert read_template_id("&::ns::op<float, P>", 0)[:2] == ("::ns::op", ["float", "P"])


def test_read_macro_args_limit():
    text = "SWITCH(t.dtype(), IType, { k<IType><<<1, 1>>>(a, b); })"
    assert read_macro_args(text, 0) == ("SWITCH", ["t.dtype()", "IType", "{k<IType><<<1, 1>>>(a, b);}"])
    assert read_macro_args(text, 0, limit=2) == ("SWITCH", ["t.dtype()", "IType"])


def test_substitute_and_normalize():
    assert normalize("gelu < fp32 ,fp32 >") == "gelu<fp32, fp32>"
    assert substitute("op<T, U>", {"T": "float", "U": "T"}.get) == "op<float, float>"
    assert substitute("x.T", {"T": "float"}.get) == "x.T"  # member access is not a name


def test_a_global_name_after_a_colon_keeps_its_tokens():
    # TE's cast_transpose_fusion.cu: `IS_DACT ? desired_load_size_dact : desired_load_size`, spelled
    # by clang from the global scope, was normalized to `...dact:::transformer_engine::...`, which
    # reads back as `::` `:` and left the template argument unfoldable
    text = normalize("IS_DACT ? ::ns::a : ::ns::b")
    assert text == "IS_DACT?::ns::a: ::ns::b"
    assert normalize(text) == text
    assert normalize("A<B<C> >") == "A<B<C>>"     # nested templates still close as `>>`


def test_a_compound_replacement_keeps_its_precedence():
    # nvec_in = load_size / itype_size with load_size = IS_DACT ? 4 : 8: without the parentheses
    # `true ? 4 : 8 / 2` is 4, the kernel's argument is (4) / 2 = 2
    got = substitute("load_size / itype_size", {"load_size": "IS_DACT?4:8", "IS_DACT": "true",
                                                 "itype_size": "sizeof(__half)"}.get)
    assert got == "(true?4:8)/sizeof(__half)"
    assert fold_text(got) == "2"
    # types and plain values are put in as they are
    assert substitute("k<T, N>", {"T": "Vec<float, 4> *", "N": "-1"}.get) == "k<Vec<float, 4>*, -1>"


def test_strip_type_and_conditions():
    assert strip_type("const InputType *") == "InputType"
    assert eval_condition("!(false)&&true") is True
    assert eval_condition("std::is_same_v<float, __half>") is False
    assert eval_condition("sizeof(__nv_bfloat16) == 2") is True
    assert eval_condition("some_runtime_value") is None


def test_expansions_multiply_multi_valued_bindings():
    copy = {"bindings": {"A": {"value": "x", "values": ["x", "y"], "kind": "type", "macro": {}},
                         "B": {"value": "1", "values": ["1", "2", "3"], "kind": "value", "macro": {}},
                         "C": {"value": "c", "kind": "type", "macro": None}}}
    views = expansions(copy)
    assert len(views) == 6
    assert {(v["bindings"]["A"]["value"], v["bindings"]["B"]["value"]) for v in views} == {
        (a, b) for a in "xy" for b in "123"}
