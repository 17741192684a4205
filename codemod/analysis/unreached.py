"""Kernels declared in the analysed TUs (and the headers they include) that no entry point
reaches, each with the reason: launched only from functions no entry point calls, launched or
named in a form the frontend does not recognise (file:line), named only in string literals (a
kernel compiled at run time from its name), or launched nowhere."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from ..model import Site, Unreached

_MAX_WHERE = 5


def unreached_kernels(root: Path, kernels_raw: dict, canon: dict, kid: dict, functions: dict, reached_fns: set,
                      sites: list[Site], scanned: dict) -> list[Unreached]:
    """`reached_fns`: usrs of the functions the entry points reach; `scanned`: tree-sitter scans of
    the closure (file -> FileScan)."""
    reached_kernels = {k for s in sites if s.entry_points for k in (s.kernels or [s.kernel]) if k}
    by_id: dict[str, dict] = {}
    for usr, k in kernels_raw.items():
        if canon.get(usr, usr) == usr:
            by_id.setdefault(kid[usr], k)
    callers = _callers(functions)
    fn_by_name = {fn["qualname"]: fn for fn in functions.values()}
    out = []
    for kernel_id, k in sorted(by_id.items()):
        if kernel_id in reached_kernels:
            continue
        own = [s for s in sites if kernel_id in (s.kernels or [s.kernel])]
        if own:
            out.append(_not_reached(kernel_id, k, own, fn_by_name, callers, reached_fns))
            continue
        spelled = _spelled_launches(k["name"], scanned)
        if spelled:
            # a plain launch clang would have recorded had it walked the function: the function is
            # called from nowhere in the analysed TUs (or the launch is in an inactive #if branch)
            plain = all(" in macro " not in form for _, form in spelled)
            out.append(Unreached(kernel=kernel_id, file=k["file"], line=k["line"], is_template=k["is_template"],
                                 reason="no_entry_point" if plain else "unrecognised_form",
                                 detail="launched at " + ", ".join(f"{w} ({form})" for w, form in spelled[:_MAX_WHERE])
                                 + (" …" if len(spelled) > _MAX_WHERE else "")
                                 + (", in code that no function of the analysed TUs calls (its callers are outside "
                                    "them), or in an inactive #if branch" if plain else
                                    ", where clang recorded no launch: a macro body the frontend did not follow"),
                                 where=[w for w, _ in spelled]))
            continue
        named = _named(root, k, scanned)
        if named and all(in_string for _, _, in_string in named):
            out.append(Unreached(kernel=kernel_id, file=k["file"], line=k["line"], is_template=k["is_template"],
                                 reason="named_in_string",
                                 detail="named only inside string literals, at " + ", ".join(
                                     w for w, _, _ in named[:_MAX_WHERE]) + (" …" if len(named) > _MAX_WHERE else "")
                                 + ": compiled at run time from its name (NVRTC), or only mentioned in a message",
                                 where=[w for w, _, _ in named]))
            continue
        named = [(w, text) for w, text, in_string in named if not in_string]
        if named:
            out.append(Unreached(kernel=kernel_id, file=k["file"], line=k["line"], is_template=k["is_template"],
                                 reason="unrecognised_form",
                                 detail="named at " + ", ".join(f"{w} (`{text}`)" for w, text in named[:_MAX_WHERE])
                                 + (" …" if len(named) > _MAX_WHERE else "")
                                 + " in a form the analysis does not recognise as a launch or host use",
                                 where=[w for w, _ in named]))
            continue
        out.append(Unreached(kernel=kernel_id, file=k["file"], line=k["line"], is_template=k["is_template"],
                             reason="not_launched",
                             detail="declared, but launched or named nowhere in the analysed TUs and the headers "
                             "they include", where=[]))
    return out


def _callers(functions: dict) -> dict[str, set[str]]:
    """callee usr -> qualified names of the functions whose walked bodies call it."""
    out: dict[str, set[str]] = defaultdict(set)
    for fn in functions.values():
        for s in fn["sites"].values():
            if s["kind"] == "call":
                for u in s.get("callees", []):
                    out[u].add(fn["qualname"])
    return out


def _not_reached(kernel_id: str, k: dict, own: list[Site], fn_by_name: dict, callers: dict,
                 reached_fns: set) -> Unreached:
    parts = []
    for s in own[:_MAX_WHERE]:
        fn = fn_by_name.get(s.function)
        who = sorted(callers.get(fn["usr"], ())) if fn else []
        if s.function == "(namespace scope)":
            parts.append(f"{s.file}:{s.line} (table '{s.via}', not used by a reached function)")
        elif who:
            parts.append(f"{s.file}:{s.line} in {s.function}, called from {', '.join(who[:3])}"
                         + (" …" if len(who) > 3 else "") + " (no entry point reaches them)")
        else:
            parts.append(f"{s.file}:{s.line} in {s.function}, which no function of the analysed TUs calls "
                         "(its callers are outside the analysed TUs, or it is unused)")
    return Unreached(kernel=kernel_id, file=k["file"], line=k["line"], is_template=k["is_template"],
                     reason="no_entry_point", detail="launched only from code the entry points do not reach: "
                     + "; ".join(parts) + (" …" if len(own) > _MAX_WHERE else ""),
                     where=[f"{s.file}:{s.line}" for s in own])


def _spelled_launches(name: str, scanned: dict) -> list[tuple[str, str]]:
    """tree-sitter launches and launch-API calls of the kernel's name: (file:line, form)."""
    out = []
    for rel, scan in sorted(scanned.items()):
        for ls in scan.launches:
            if ls.callee.split("::")[-1] == name:
                out.append((f"{rel}:{ls.line}", "<<<>>>" + (f" in macro {ls.macro}" if ls.macro else "")))
        for ac in scan.api_calls:
            if any(re.search(rf"\b{re.escape(name)}\b", a) for a in ac.args):
                out.append((f"{rel}:{ac.line}", ac.api + (f" in macro {ac.macro}" if ac.macro else "")))
    return out


def _named(root: Path, k: dict, scanned: dict) -> list[tuple[str, str, bool]]:
    """Lines of the closure that name the kernel outside its declarations and comments:
    (file:line, the line, whether every mention on it is inside a string literal)."""
    word = re.compile(rf"\b{re.escape(k['name'])}\b")
    decl_lines = defaultdict(set)
    for rel, scan in scanned.items():
        for kd in scan.kernels:
            if kd.name == k["name"]:
                decl_lines[rel].add(kd.line)
    decl_lines[k["file"]].add(k["line"])
    out = []
    for rel in sorted(scanned):
        try:
            text = (root / rel).read_text(errors="replace")
        except OSError:
            continue
        if k["name"] not in text:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            code = line.split("//", 1)[0]
            if i in decl_lines[rel] or not word.search(code) or code.lstrip().startswith(("*", "/*")):
                continue
            if "__global__" in code:
                continue
            in_string = all(code[:m.start()].count('"') - code[:m.start()].count('\\"') & 1
                            for m in word.finditer(code))
            out.append((f"{rel}:{i}", " ".join(code.split())[:80], bool(in_string)))
    return out
