"""Reach of registry-dispatched launchers (TE normalization's patterns): each piece on its own.
The golden case golden/normlib checks them together (tests/analysis/test_golden_analysis.py)."""

from codemod.analysis.instantiate import Evaluator, Instantiator, MemberConstants
from codemod.frontend.source_text import (find_pasted, macro_params, normalize, splice_varargs, substitute,
                                          vararg_names)


def test_comments_and_line_continuations_are_not_tokens():
    # `32 * 32,  // THREADS_PER_CTA` in an alias's arguments (TE ln_bwd_semi_cuda_kernel.cu)
    assert normalize("K<H, 32 * 32,  // THREADS_PER_CTA\n B>") == "K<H, 32*32, B>"
    assert normalize("f(1 /* a */, 2)") == "f(1, 2)"
    assert normalize('f("a//b")') == 'f("a//b")'
    # a template argument list read from a #define body keeps its backslash-newlines
    assert normalize("launch<W, H, \\\n   __VA_ARGS__>") == "launch<W, H, __VA_ARGS__>"


def test_variadic_macro_parameters():
    assert macro_params("A, B, \\\n  C, ...") == ["A", "B", "C", "__VA_ARGS__"]
    assert macro_params("A, rest...") == ["A", "rest"]
    spliced = splice_varargs(["W", "__VA_ARGS__"], ("__VA_ARGS__", ["1", "4", "16"]))
    assert spliced == ["W", *vararg_names("__VA_ARGS__", 3)]
    assert splice_varargs(["W"], None) == ["W"]


def test_token_pasted_callee_is_found_in_the_body():
    body = "  void f() { launch_ln_fwd_##LAUNCH_TYPE##_<WTYPE, __VA_ARGS__>(p); }"
    start, end = find_pasted(body, "launch_ln_fwd_tuned_", {"LAUNCH_TYPE": "tuned"})
    assert body[start:end] == "launch_ln_fwd_##LAUNCH_TYPE##_" and body[end] == "<"
    assert find_pasted(body, "launch_ln_fwd_general_", {"LAUNCH_TYPE": "tuned"}) is None


def test_a_member_is_not_substituted_as_a_name_in_scope():
    assert substitute("X<T>::N + N", {"T": "int", "N": "3"}.get) == "X<int>::N+3"


CLASSES = {
    "ns::Base": {"params": [{"name": "T_", "default": None}, {"name": "CTA_", "default": None}], "bases": [],
                 "constants": {"THREADS_PER_WARP": "32", "THREADS_PER_CTA": "CTA_"}},
    "ns::Traits": {"params": [{"name": "T_", "default": None}, {"name": "WM_", "default": None},
                              {"name": "BYTES_", "default": "16"},
                              {"name": "Base", "default": "ns::Base < T_ , WM_ * 32 >"}],
                   "bases": ["Base"], "constants": {"NUM_ELTS": "BYTES_ / sizeof ( T_ )", "ROWS": "WM_"}},
}


def test_member_constants_through_defaults_and_bases():
    m = MemberConstants(CLASSES)
    assert m.resolve("ns::Traits<float, 4>::THREADS_PER_WARP") == "32"       # inherited, Base defaulted
    assert m.resolve("ns::Traits<float, 4>::THREADS_PER_CTA") == "128"       # the base's argument folded
    assert m.resolve("ns::Traits<__half, 4, 8>::NUM_ELTS") == "4"            # sizeof of a known type
    assert m.resolve("k<ns::Traits<float, 2>::ROWS, 3>") == "k<2, 3>"
    assert m.resolve("ns::Other<float>::N") == "ns::Other<float>::N"        # unknown class: unchanged


def test_namespace_constant_in_a_default():
    # TE: `Base = Kernel_traits_base<..., WARPS_M_ * WARPS_N_ * THREADS_PER_WARP>`, the last a
    # namespace-scope constexpr
    classes = {**CLASSES, "ns::Traits": {**CLASSES["ns::Traits"], "params": [
        *CLASSES["ns::Traits"]["params"][:3], {"name": "Base", "default": "ns::Base < T_ , WM_ * kWarp >"}]}}
    assert MemberConstants(classes, {"kWarp": "32"}).resolve("ns::Traits<float, 2>::THREADS_PER_CTA") == "64"


def test_bound_alias_then_member():
    # `Kernel_traits::THREADS_PER_WARP` with the alias bound in the launcher
    ev = Evaluator({}, CLASSES)
    bindings = {"KT": {"value": "ns::Traits<float, 4>", "kind": "type"}}
    assert ev.evaluate("KT::THREADS_PER_WARP", {}, bindings) == "32"


def _fn(usr, name, tparams=(), sites=None):
    return {"usr": usr, "name": name, "qualname": name, "file": "a.cu", "line": 1, "is_template": bool(tparams),
            "tparams": list(tparams), "params": [], "static": False, "sites": sites or {}}


def test_registry_lookup_reaches_every_registered_function_and_defaults_bind():
    launcher = _fn("L", "launch", [{"name": "T", "kind": "type"}, {"name": "F", "kind": "value", "default": True,
                                                                    "default_text": "false"}])
    reg = _fn("R", "reg_float", sites={"c": {"kind": "call", "callees": ["L"], "callee_names": ["launch"],
                                             "targs": ["float"], "copies": [{"bindings": {}}]}})
    entry = _fn("E", "entry", sites={"c": {"kind": "call", "callees": [], "callee_names": ["ns::Registry::find"],
                                           "targs": [], "copies": [{"bindings": {}}]}})
    inst = Instantiator({f["usr"]: f for f in (launcher, reg, entry)}, {})
    inst.add_registrations([{"kind": "registration", "registry": "ns::Registry", "function": "R"}])
    inst.run({"E": "entry"})
    assert "R" in inst.envs
    (env, ents), = inst.envs["L"].values()
    assert env == {"T": "float", "F": "false"} and ents == {"entry"}


def test_kernel_defaults_bind_so_omitted_and_spelled_defaults_are_one_instantiation():
    """`k<T>` and `k<T, false>` of `template <typename T, bool F = false>` are the same
    instantiation; an enable_if parameter stays `(default)`."""
    kernel = {"usr": "K", "name": "k", "params": [
        {"name": "T", "kind": "type"},
        {"name": "F", "kind": "value", "type": "bool", "default": True, "default_text": "false"},
        {"name": "E", "kind": "value", "type": "std::enable_if_t<true, int>", "default": True, "default_text": "0"}],
        "fn_params": []}
    sites = {f"launch{i}": {"kind": "launch", "kernel": "K", "targs": targs, "copies": [{"bindings": {}}]}
             for i, targs in enumerate((["float"], ["float", "false"], ["float", "true"]))}
    fn = _fn("L", "launch", sites=sites)
    inst = Instantiator({"L": fn}, {})
    inst.run({"L": "launch"})
    got = set()
    for s in sites.values():
        got |= set(inst.kernel_tuples(fn, s, kernel))
    assert got == {("float", "false", "(default)"), ("float", "true", "(default)")}
