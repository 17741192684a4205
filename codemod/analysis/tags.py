"""Generic-lambda tags (frontend: recognizers/tags.py): each `tag` binding of a lambda's `auto`
parameter takes the types the helper it is passed to calls it with, and becomes a value switch
over them (`dispatch_bool(flag, [&](auto tag) {...})`: {true_type, false_type})."""

from __future__ import annotations

import re

# `decltype(std::integral_constant<bool, true>)::value` (a tag's type substituted) -> `true`
TAG_VALUE = re.compile(r"decltype\(\s*(?:::)?std::integral_constant<\s*[\w:\s]+?,\s*([^<>(),]+?)\s*>\s*(?:\{\s*\})?\s*\)::value")


def resolve_tags(functions: dict[str, dict]) -> None:
    """Fill every tag binding in place: `values` (the types the helper passes at the lambda's
    parameter position), `kind: value`, and `macro` naming the helper and its call."""
    for fn in functions.values():
        calls = {s.get("call_at"): s for s in fn["sites"].values() if s["kind"] == "call"}
        for site in fn["sites"].values():
            for copy in site.get("copies", ()):
                for b in copy.get("bindings", {}).values():
                    if b.get("kind") == "tag":
                        _resolve(b, calls, functions)


def _resolve(b: dict, calls: dict, functions: dict) -> None:
    tag = b["tag"]
    call = calls.get(tag["call_at"])
    values: list[str] = []
    helpers = []
    for usr in (call or {}).get("callees", ()):
        helper = functions.get(usr)
        if helper is None:
            continue
        helpers.append(helper["qualname"])
        for args in helper.get("param_calls", {}).get(str(tag["arg"]), []):
            if tag["pos"] < len(args) and args[tag["pos"]] not in values:
                values.append(args[tag["pos"]])
    if not values:
        return   # stays the parameter's name: the axis is unresolved
    file, _, line = tag["call_at"].rpartition(":")[0].rpartition(":")
    b.update(kind="value", value=values[0], values=sorted(values),
             macro={"name": helpers[0], "expr": f"decltype({tag['param']})", "file": file, "line": int(line)})
