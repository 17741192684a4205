"""The library's NVRTC layer, extended where it lacks what the generated stubs call (rule key
`nvrtc_layer.extend`): each feature is detected in the target's layer header and, when missing,
added by anchored edits rendered from `templates/apply/layer/`. An anchor that is not found is an
ApplyError naming the feature, the file and the construct looked for; nothing is guessed.

The layer shape these templates fit ("kernel manager"): a singleton manager class (the class named
by `nvrtc_layer.manager`) holding its compiled kernels in `kernel_cache_`, keyed by
`get_kernel_cache_key(label, device)`, each kernel giving its `CUfunction` by
`get_function(device)`, guarded by the class's one standard mutex member (the lookups added here
take it at the lookup); a `compile(label, name, code, filename)` member defined in the layer's
source whose body calls `nvrtcCreateProgram` and `nvrtcCompileProgram` once each (the latter
becomes `compile_program_one_target`: one --gpu-architecture; where the failure branch after it
prints NVRTC's log to std::cerr and then checks the result, as TE's does, the error carries the log
instead)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ApplyError
from ..base import source


@dataclass(frozen=True)
class Feature:
    name: str
    member: str                   # the manager member whose declaration means "present"
    needs: tuple[str, ...]        # features added first when missing
    header: str | None            # template inserted in the manager class (`section`)
    source_defs: str | None       # template appended to the layer source's namespace
    why: str
    section: str = "public"       # public: before the class's `private:`; private: after it


# The stubs call: compile with options and headers, compiling with one target (always),
# set_function_attribute (always),
# occupancy_max_active_blocks_per_sm and launch_cooperative (when a migrated site does),
# global_address (when a migrated kernel has shared variables).
# `function_for` is the lookup the others share. Order: the order edits are added in.
FEATURES: dict[str, Feature] = {f.name: f for f in [
    Feature("compile_headers", "", (), None, None,
            "compile(label, name, code, filename, options, headers): NVRTC options and in-memory headers per program"),
    Feature("compile_program", "", (), None, None,
            "compile's NVRTC compile through compile_program_one_target: one --gpu-architecture (a target in the "
            "extra options replaces the layer's own); a failure branch that prints NVRTC's log then checks the "
            "result throws with the log"),
    Feature("function_for", "rtc_function", (), "layer/function_for.h.j2", "layer/function_for.cpp.j2",
            "the CUfunction of a compiled kernel on the current device (for the features below)", "private"),
    Feature("set_function_attribute", "set_function_attribute", ("function_for",),
            "layer/set_function_attribute.h.j2", "layer/set_function_attribute.cpp.j2",
            "cuFuncSetAttribute on a compiled kernel (cudaFuncSetAttribute of the static path)"),
    Feature("occupancy", "occupancy_max_active_blocks_per_sm", ("function_for",),
            "layer/occupancy.h.j2", "layer/occupancy.cpp.j2",
            "cuOccupancyMaxActiveBlocksPerMultiprocessor on a compiled kernel"),
    Feature("launch_cooperative", "launch_cooperative", ("function_for",),
            "layer/launch_cooperative.h.j2", None,
            "cuLaunchCooperativeKernel of a compiled kernel (cudaLaunchCooperativeKernel of the static path)"),
    Feature("global_address", "global_address", ("function_for",),
            "layer/global_address.h.j2", "layer/global_address.cpp.j2",
            "cuModuleGetGlobal in a compiled kernel's module (migrate.shared_variables: the stubs copy "
            "the static copy of a __device__ variable there)"),
]}

REQUIRED_MEMBERS = ("kernel_cache_", "get_kernel_cache_key", "compile", "is_compiled")
# The helper the compile_program feature defines in the layer source: its name means "present".
COMPILE_PROGRAM = "compile_program_one_target"
# The manager's mutex (the one guarding kernel_cache_) -> the lock a reader of the map takes.
READ_LOCKS = {"std::shared_mutex": "std::shared_lock<std::shared_mutex>",
              "std::shared_timed_mutex": "std::shared_lock<std::shared_timed_mutex>",
              "std::mutex": "std::lock_guard<std::mutex>",
              "std::recursive_mutex": "std::lock_guard<std::recursive_mutex>",
              "std::timed_mutex": "std::lock_guard<std::timed_mutex>"}


@dataclass
class LayerEdit:
    path: str
    start: int
    end: int
    text: str
    why: str


def required(stub_features: dict[str, bool], listed: list[str]) -> list[str]:
    """The features the stubs call plus those the rule lists, with what they need, in FEATURES order."""
    want = {"compile_headers", "compile_program", "set_function_attribute", *listed}
    if stub_features.get("occupancy"):
        want.add("occupancy")
    if stub_features.get("cooperative"):
        want.add("launch_cooperative")
    if stub_features.get("shared"):
        want.add("global_address")
    for name in list(want):
        want.update(FEATURES[name].needs)
    return [n for n in FEATURES if n in want]


def require_without_extend(root: Path, layer: dict, stub_features: dict[str, bool]) -> None:
    """Without `nvrtc_layer.extend` the layer is taken as complete, except for `global_address`,
    which only shared variables call: a layer that lacks it would leave host code that does not
    compile, so apply stops here, naming the key that adds it."""
    if not stub_features.get("shared"):
        return
    data = (root / layer["header"]).read_bytes() if (root / layer["header"]).is_file() else b""
    manager = layer["manager"].removesuffix("()").split("::")
    cls_name = manager[-2] if manager[-1] == "instance" and len(manager) > 1 else manager[-1]
    cls = _class(source.parse(data), data, cls_name) if data else None
    if cls is None or "global_address" not in _members(cls, data):
        raise ApplyError(f"migrate.shared_variables needs the NVRTC layer's global_address, which class {cls_name} "
                         "does not declare", where=layer["header"],
                         hint="add nvrtc_layer.extend (driver_call, check_macro) and nvrtc_layer.source to the "
                              "rule: apply then adds it (docs/apply.md, the NVRTC layer)")


def _class(root, data: bytes, name: str):
    for n in source._walk(root):
        if n.type in ("class_specifier", "struct_specifier") and n.child_by_field_name("body") is not None:
            nm = n.child_by_field_name("name")
            if nm is not None and source.node_text(data, nm) == name:
                return n
    return None


def _members(cls, data: bytes) -> dict[str, object]:
    """Member name -> its declaration node (functions, data members, member templates)."""
    out = {}
    for n in cls.child_by_field_name("body").named_children:
        decl = n
        if n.type == "template_declaration":
            decl = next((c for c in n.named_children if c.type in ("declaration", "field_declaration",
                                                                   "function_definition")), n)
        for d in source._walk(decl):
            if d.type in ("field_identifier", "identifier") and d.parent is not None and d.parent.type in (
                    "function_declarator", "field_declaration", "init_declarator", "array_declarator",
                    "pointer_declarator", "reference_declarator"):
                out.setdefault(source.node_text(data, d), n)
                break
    return out


def _mutexes(cls, data: bytes) -> list[tuple[str, str]]:
    """(name, type) of the class's data members whose type is a standard mutex."""
    out = []
    for n in cls.child_by_field_name("body").named_children:
        if n.type != "field_declaration":
            continue
        t = n.child_by_field_name("type")
        d = n.child_by_field_name("declarator")
        if t is not None and d is not None and "".join(source.node_text(data, t).split()) in READ_LOCKS:
            out.append((source.node_text(data, d), "".join(source.node_text(data, t).split())))
    return out


def _section_at(cls, data: bytes, section: str) -> int:
    """public: the start of the line of the class's first `private:` label; private: the line after
    it. Without a `private:` label, the closing brace (a `private:` label is then added)."""
    body = cls.child_by_field_name("body")
    for n in body.named_children:
        if n.type == "access_specifier" and source.node_text(data, n) == "private":
            if section == "public":
                return data.rfind(b"\n", 0, n.start_byte) + 1
            return data.find(b"\n", n.end_byte) + 1
    return body.end_byte - 1


def _params_end(decl, data: bytes) -> int | None:
    for n in source._walk(decl):
        if n.type == "function_declarator":
            plist = n.child_by_field_name("parameters")
            return plist.end_byte - 1 if plist is not None else None
    return None


def _definition(root, data: bytes, qualified: str):
    for n in source._walk(root):
        if n.type == "function_definition":
            d = n.child_by_field_name("declarator")
            for q in source._walk(d) if d is not None else []:
                if q.type == "qualified_identifier" and "".join(source.node_text(data, q).split()) == qualified:
                    return n
    return None


def _calls(node, data: bytes, callee: str) -> list:
    return [n for n in source._walk(node) if n.type == "call_expression"
            and n.child_by_field_name("function") is not None
            and source.node_text(data, n.child_by_field_name("function")) == callee]


def _namespace_end(root, data: bytes, inside: int) -> int | None:
    """The closing brace of the innermost namespace block containing offset `inside`."""
    best = None
    for n in source._walk(root):
        if n.type == "namespace_definition" and n.start_byte <= inside < n.end_byte:
            best = n
    if best is None:
        return None
    return best.child_by_field_name("body").end_byte - 1


def _line_start(data: bytes, at: int) -> int:
    return data.rfind(b"\n", 0, at) + 1


def extend(root: Path, layer: dict, stub_features: dict[str, bool], render: Callable[..., str]
           ) -> tuple[list[LayerEdit], list[str], list[str]]:
    """(edits, features added, features already present) for the rule's `nvrtc_layer`."""
    cfg = layer["extend"]
    if "source" not in layer:
        raise ApplyError("nvrtc_layer.extend needs nvrtc_layer.source (the layer's .cpp defining compile)",
                         hint="add `source:` to the rule's nvrtc_layer")
    header, src = layer["header"], layer["source"]
    manager = layer["manager"].removesuffix("()").split("::")
    cls_name = manager[-2] if manager[-1] == "instance" and len(manager) > 1 else manager[-1]
    header_type = layer["header_type"].split("::")[-1]
    where_h, where_s = root / header, root / src
    for p, what in ((where_h, "nvrtc_layer.header"), (where_s, "nvrtc_layer.source")):
        if not p.is_file():
            raise ApplyError(f"{what}: no such file", where=str(p.relative_to(root)))
    hdata, sdata = where_h.read_bytes(), where_s.read_bytes()
    hroot, sroot = source.parse(hdata), source.parse(sdata)
    cls = _class(hroot, hdata, cls_name)
    if cls is None:
        raise ApplyError(f"the NVRTC layer has no class {cls_name} (from nvrtc_layer.manager)", where=header,
                         hint="check nvrtc_layer.manager and nvrtc_layer.header")
    members = _members(cls, hdata)
    missing = [m for m in REQUIRED_MEMBERS if m not in members]
    if missing:
        raise ApplyError(f"class {cls_name} has no {', '.join(missing)}: nvrtc_layer.extend fits a kernel-manager "
                         "layer (docs/apply.md, the NVRTC layer)", where=header)
    ctx = dict(manager=cls_name, header_type=header_type, driver_call=cfg["driver_call"],
               check_macro=cfg["check_macro"], error_macro=layer["error_macro"])

    want = required(stub_features, cfg.get("features", []))
    compile_decl = members["compile"]
    has = {"compile_headers": header_type in source.node_text(hdata, compile_decl),
           "compile_program": COMPILE_PROGRAM.encode() in sdata}
    present = {n for n in want if has.get(n, FEATURES[n].member in members)}
    added = [n for n in want if n not in present]
    if "function_for" in added:
        ctx.update(_read_lock(cls, hdata, cls_name, header))
    edits: list[LayerEdit] = []
    h_insert, s_append = {"public": [], "private": []}, []
    for name in added:
        f = FEATURES[name]
        if name == "compile_headers":
            edits += _compile_headers(header, hdata, hroot, cls, compile_decl, src, sdata, sroot, cls_name, ctx, render,
                                      with_compile_program="compile_program" in added)
            continue
        if name == "compile_program":
            if "compile_headers" not in added:     # else compile_headers' helper calls it
                edits += _compile_program(src, sdata, sroot, cls_name, ctx, render)
            continue
        if f.header:
            h_insert[f.section].append(render(f.header, **ctx))
        if f.source_defs:
            s_append.append(render(f.source_defs, **ctx))
    for section, texts in h_insert.items():
        if texts:
            at = _section_at(cls, hdata, section)
            text = "".join(texts)
            if section == "private" and hdata[at:at + 1] == b"}":
                text = " private:\n" + text
            edits.append(LayerEdit(header, at, at, text, "NVRTC layer features the stubs call"))
    if s_append:
        anchor = _definition(sroot, sdata, f"{cls_name}::compile")
        if anchor is None:
            raise ApplyError(f"no definition of {cls_name}::compile (the anchor for the layer's additions)", where=src)
        end = _namespace_end(sroot, sdata, anchor.start_byte)
        if end is None:
            raise ApplyError(f"{cls_name}::compile is not defined inside a namespace block", where=src)
        at = _line_start(sdata, end)
        edits.append(LayerEdit(src, at, at, "".join(s_append), "NVRTC layer features the stubs call"))
    return edits, added, [n for n in want if n in present]


def _read_lock(cls, data: bytes, cls_name: str, header: str) -> dict[str, str]:
    """The lock a reader of kernel_cache_ takes: on the class's one standard mutex member."""
    found = _mutexes(cls, data)
    if len(found) != 1:
        raise ApplyError(f"class {cls_name} declares {len(found)} standard mutex members (the anchor needs exactly "
                         "one: the lock guarding kernel_cache_)", where=header,
                         hint="nvrtc_layer.extend fits a kernel-manager layer with one mutex (docs/apply.md, "
                              "the NVRTC layer)")
    name, type_ = found[0]
    return {"mutex": name, "lock_type": READ_LOCKS[type_]}


def _compile_call(src, sdata, sroot, cls_name):
    """(compile's definition, its one nvrtcCompileProgram call); ApplyError when not exactly one."""
    definition = _definition(sroot, sdata, f"{cls_name}::compile")
    if definition is None:
        raise ApplyError(f"no definition of {cls_name}::compile", where=src)
    found = _calls(definition.child_by_field_name("body"), sdata, "nvrtcCompileProgram")
    if len(found) != 1:
        raise ApplyError(f"compile_program: {cls_name}::compile calls nvrtcCompileProgram {len(found)} times (the "
                         "anchor needs exactly one)", where=src)
    return definition, found[0]


def _compile_program(src, sdata, sroot, cls_name, ctx, render) -> list[LayerEdit]:
    """compile's nvrtcCompileProgram call becomes compile_program_one_target (same parameters and
    result), defined above compile; the failure branch's log goes into its error (_log_in_error)."""
    definition, call = _compile_call(src, sdata, sroot, cls_name)
    at = _before_comments(sdata, definition)
    fn = call.child_by_field_name("function")
    why = "one --gpu-architecture"
    return [LayerEdit(src, at, at, render("layer/compile_program.cpp.j2", namespaced=True, **ctx), why),
            LayerEdit(src, fn.start_byte, fn.end_byte, COMPILE_PROGRAM, why),
            *_log_in_error(src, sdata, definition, call, ctx["error_macro"])]


_PRINTED_LOG = re.compile(rb"std::cerr\s*<<\s*(\w+)\s*;")


def _log_in_error(src, sdata, definition, call, error_macro: str) -> list[LayerEdit]:
    """In the branch compile takes when the compile's result is not NVRTC_SUCCESS: `std::cerr <<
    log;` then a check of the result (`NVTE_CHECK_NVRTC(compile_result);`, TE's) become
    `<error_macro>(log);`: the error carries what the branch printed. No edit when compile's
    failure path has another shape (it throws with the log already, say)."""
    holder = call
    while holder is not None and holder.type not in ("declaration", "init_declarator"):
        holder = holder.parent
    if holder is None or holder.type != "init_declarator":
        return []
    result = source.node_text(sdata, holder.child_by_field_name("declarator"))
    for branch in (n for n in source._walk(definition) if n.type == "if_statement"):
        condition = source.node_text(sdata, branch.child_by_field_name("condition"))
        if result not in condition or "NVRTC_SUCCESS" not in condition:
            continue
        body = branch.child_by_field_name("consequence")
        stmts = [s for s in (body.named_children if body is not None else []) if s.type != "comment"]
        for printed, check in zip(stmts, stmts[1:]):
            m = _PRINTED_LOG.fullmatch(source.node_text(sdata, printed).encode())
            call_node = check.named_children[0] if check.type == "expression_statement" and check.named_children \
                else None
            if m is None or call_node is None or call_node.type != "call_expression":
                continue
            args = call_node.child_by_field_name("arguments").named_children
            if len(args) == 1 and source.node_text(sdata, args[0]) == result:
                log, start, text = m.group(1).decode(), printed.start_byte, ""
                above = printed.prev_sibling
                if above is not None and above.type == "comment" and above.end_point[0] + 1 == printed.start_point[0]:
                    # its comment ("Display log and throw error") said what the two lines did
                    start = above.start_byte
                    text = "// Throw with the log\n" + " " * printed.start_point[1]
                return [LayerEdit(src, start, check.end_byte, f"{text}{error_macro}({log});",
                                  "a failed compile's error carries NVRTC's log (printed to stderr before)")]
    return []


def _compile_headers(header, hdata, hroot, cls, decl, src, sdata, sroot, cls_name, ctx, render,
                     with_compile_program: bool = False) -> list[LayerEdit]:
    """`compile` gains `extra_options` and `extra_headers` (defaulted in the declaration); its body's
    nvrtcCreateProgram / nvrtcCompileProgram calls go through helpers that append them (the latter
    then calls compile_program_one_target when `with_compile_program`, and the failure branch's
    log goes into its error: _log_in_error)."""
    where = f"{header}: {cls_name}::compile"
    if _class(hroot, hdata, ctx["header_type"]) is not None:
        raise ApplyError(f"the layer declares {ctx['header_type']} but compile does not take it", where=header,
                         hint="nvrtc_layer.header_type must name the type compile's headers parameter takes")
    decl_end = _params_end(decl, hdata)
    definition = _definition(sroot, sdata, f"{cls_name}::compile")
    if decl_end is None or definition is None:
        raise ApplyError(f"compile_headers: no declaration with parameters or no definition of {cls_name}::compile",
                         where=where)
    def_end = _params_end(definition, sdata)
    calls = {c: _calls(definition.child_by_field_name("body"), sdata, c)
             for c in ("nvrtcCreateProgram", "nvrtcCompileProgram")}
    for c, found in calls.items():
        if len(found) != 1:
            raise ApplyError(f"compile_headers: {cls_name}::compile calls {c} {len(found)} times (the anchor needs "
                             "exactly one)", where=src)
    type_at = _before_comments(hdata, _declaration(cls))
    edits = [
        LayerEdit(header, type_at, type_at, render("layer/header_type.h.j2", **ctx), "in-memory NVRTC header type"),
        LayerEdit(header, decl_end, decl_end, render("layer/compile_params.j2", defaults=True, **ctx).rstrip("\n"),
                  "compile takes NVRTC options and headers"),
        LayerEdit(src, def_end, def_end, render("layer/compile_params.j2", defaults=False, **ctx).rstrip("\n"),
                  "compile takes NVRTC options and headers"),
    ]
    helpers_at = _before_comments(sdata, definition)
    edits.append(LayerEdit(src, helpers_at, helpers_at, render("layer/compile_helpers.cpp.j2",
                                                               with_compile_program=with_compile_program, **ctx),
                           "helpers appending the options and headers"))
    for callee, helper, first in (("nvrtcCreateProgram", "create_program_with_headers", "extra_headers"),
                                  ("nvrtcCompileProgram", "compile_program_with_options", "extra_options")):
        fn = calls[callee][0].child_by_field_name("function")
        args = calls[callee][0].child_by_field_name("arguments")
        edits.append(LayerEdit(src, fn.start_byte, fn.end_byte, helper, f"{callee} with the extra {first}"))
        edits.append(LayerEdit(src, args.start_byte + 1, args.start_byte + 1, f"{first}, ",
                               f"{callee} with the extra {first}"))
    if with_compile_program:
        edits += _log_in_error(src, sdata, definition, calls["nvrtcCompileProgram"][0], ctx["error_macro"])
    return edits


def _declaration(n):
    """The top node of a class declaration (`class X {...};` is a declaration holding the specifier)."""
    while n.parent is not None and n.parent.type in ("declaration", "template_declaration"):
        n = n.parent
    return n


def _before_comments(data: bytes, node) -> int:
    """The start of the line of the comments directly above `node` (`//` and `/* */`), else of its line."""
    first = node
    prev = node.prev_sibling
    while prev is not None and prev.type == "comment" and data[prev.end_byte:first.start_byte].count(b"\n") <= 1:
        first, prev = prev, prev.prev_sibling
    return _line_start(data, first.start_byte)
