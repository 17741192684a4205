"""Axis binding: where each template argument of a launch comes from, and whether it is runtime-discoverable.

Classes (docs/analysis-schema.md): type_switch (an alias made by a type-switch macro over a
runtime dtype), value_switch (a constexpr made by a value/condition switch macro), entry_param
(bound per public entry point, e.g. the activation functor), runtime_branch (a literal chosen by a
runtime if/switch among sibling launches), derived (computed at compile time from other axes),
constant (fixed at every launch: structural), unresolved.
"""

from __future__ import annotations

import re
from collections import defaultdict

from .instantiate import UNKNOWN, strip_type

PRIORITY = ("derived", "type_switch", "value_switch", "entry_param", "runtime_branch", "constant", "unresolved")
_WORD = re.compile(r"(?:::)?[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*")
_KEYWORDS = {"true", "false", "sizeof", "nullptr", "const", "unsigned", "int", "float", "double",
             "bool", "char", "long", "short", "void", "size_t", "constexpr", "static_cast"}


class AxisClassifier:
    def __init__(self, functions: dict[str, dict], entry_usrs: dict[str, str],
                 explicit: dict[str, list[tuple[str, dict]]] | None = None):
        """`explicit`: function template usr -> (entry label, environment) of each of its explicit
        instantiations (`template void f<A, B>(...);`), which bind its parameters per entry point."""
        self.functions = functions
        self.entries = entry_usrs
        self.explicit = explicit or {}
        self.callers: dict[str, list[tuple[dict, dict]]] = defaultdict(list)
        for fn in functions.values():
            for site in fn["sites"].values():
                if site["kind"] == "call":
                    for u in site.get("callees", []):
                        self.callers[u].append((fn, site))
        self._memo: dict[tuple[str, str], frozenset] = {}

    def origins(self, text: str, fn: dict, bindings: dict, depth: int = 0, via_param: bool = False) -> frozenset:
        """Set of (class, detail) sources of an argument's value."""
        if depth > 12:
            return frozenset({("unresolved", "binding chain too deep")})
        tparams = {p["name"] for p in fn["tparams"]}
        out = set()
        derived = False
        for name in _WORD.findall(text):
            bare = name.lstrip(":")
            if bare in _KEYWORDS:
                continue
            if bare in bindings:
                b = bindings[bare]
                m = b.get("macro")
                if b["kind"] == "macro_arg":
                    out.add(("macro_arg", f"{m['name']}({m['expr']}) at {m['file']}:{m['line']}"))
                elif m:
                    cls = "type_switch" if b["kind"] == "type" else "value_switch"
                    out.add((cls, f"{m['name']}({m['expr']}) at {m['file']}:{m['line']}"))
                else:
                    derived = True
                    out |= self.origins(b["value"], fn, bindings, depth + 1, via_param)
            elif bare in tparams:
                out |= self.param_origins(fn, bare, depth + 1)
        if derived:
            out = {("derived", "") } | out
        if not out:
            # A literal passed down from an entry point binds a parameter per entry point; one
            # spelled at the launch itself is just a constant.
            if via_param and fn["usr"] in self.entries:
                out.add(("entry_param", f"{self.entries[fn['usr']]}: {text}"))
            else:
                out.add(("constant", text))
        return frozenset(out)

    def param_origins(self, fn: dict, param: str, depth: int) -> frozenset:
        key = (fn["usr"], param)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = frozenset({("unresolved", "recursive binding")})
        idx = next(i for i, p in enumerate(fn["tparams"]) if p["name"] == param)
        out = {("entry_param", f"{label}: {env.get(param)}") for label, env in self.explicit.get(fn["usr"], [])}
        for caller, site in self.callers.get(fn["usr"], []):
            targs = site.get("targs") or []
            for copy in site["copies"]:
                if idx < len(targs):
                    text = targs[idx]
                else:
                    text = None
                    for fp, at in zip(fn["params"], copy.get("arg_types") or []):
                        if strip_type(fp["type"]) == param:
                            text = strip_type(at)
                            break
                if text is None and fn["tparams"][idx].get("default_text") is not None:
                    # not passed: the parameter's default, spelled at its declaration
                    out.add(("constant", fn["tparams"][idx]["default_text"]))
                    continue
                if text is None:
                    out.add(("unresolved", f"'{param}' of {fn['qualname']} not bound at {site['file']}:{site['line']}"))
                    continue
                out |= self.origins(text, caller, copy.get("bindings", {}), depth, True)
        res = frozenset(out or {("unresolved", f"no caller binds '{param}' of {fn['qualname']}")})
        self._memo[key] = res
        return res


def classify(sources: frozenset, domain: list[str], literal_varies_by_branch: bool, branches: list[str]) -> tuple[str, bool, str]:
    """Primary binding class, discoverability and a one-line reason."""
    classes = {c for c, _ in sources}
    if "macro_arg" in classes:
        # a launch spelled in a macro body: each invocation passes its own value
        classes = (classes - {"macro_arg"}) | {"constant"}
        if len(domain) > 1:
            return "runtime_branch", True, "each macro invocation passes its own value: " + ", ".join(domain)
    if "derived" in classes and classes - {"derived"} <= {"constant"}:
        classes = {"constant"}  # computed only from constants: still structural
    if UNKNOWN in domain:
        return "unresolved", False, "a value could not be determined statically"
    if classes == {"constant"}:
        if literal_varies_by_branch and branches:
            return "runtime_branch", True, f"chosen at run time by: {branches[-1]}"
        vals = ", ".join(domain)
        return "constant", False, f"structural: fixed at every launch ({vals})"
    primary = next(c for c in PRIORITY if c in classes)
    if "unresolved" in classes:
        primary = "unresolved"
    if primary == "unresolved":
        return primary, False, min(d for c, d in sources if c == "unresolved")   # stable across hash seeds
    reasons = {
        "type_switch": "runtime dtype switch",
        "value_switch": "runtime value switch",
        "entry_param": "bound per entry point",
        "derived": "computed from other axes",
        "runtime_branch": "runtime branch",
    }
    detail = sorted({d for c, d in sources if c == primary and d})
    if primary == "derived":
        detail = [", ".join(sorted({c for c, _ in sources} - {"derived"}))]
    return primary, True, reasons[primary] + (f": {detail[0]}" if detail else "")
