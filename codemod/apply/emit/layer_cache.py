"""Layer feature `cache` (issue 17): the target's NVRTC layer gets per-variant compiles and an opt-in
disk cache shared by the processes of a machine. Detected (the layer source already includes the
generated header: nothing to do) or added: the header from templates/apply/layer/rtc_cache.h.j2,
and edits of the layer source found with tree-sitter: the include; the program calls renamed to the
header's (`rtc_cache::create_program`, ..., `rtc_cache::load_or_compile` for nvrtcCompileProgram)
and `nvrtcProgram` to `rtc_cache::ProgramHandle`; the compile function's lock replaced by
`rtc_cache::CompileLock`, released and taken again around the compile statement, in the function.
Also the cache's key and entry format in Python (`codemod warm` writes entries the layer reads)."""

from __future__ import annotations

import posixpath
import re

from ... import nvrtc_options
from ...errors import ApplyError
from .layer import LayerEdit
from ..base.source import _walk, includes, node_text, parse

FEATURE = "cache"
# The NVRTC functions taking a program -> the generated header's function in their place (same
# parameters and result codes, a ProgramHandle for the nvrtcProgram).
PROGRAM_FUNCTIONS = {"nvrtcCreateProgram": "create_program", "nvrtcDestroyProgram": "destroy_program",
                     "nvrtcAddNameExpression": "add_name_expression", "nvrtcCompileProgram": "load_or_compile",
                     "nvrtcGetProgramLogSize": "get_program_log_size", "nvrtcGetProgramLog": "get_program_log",
                     "nvrtcGetLoweredName": "get_lowered_name", "nvrtcGetCUBINSize": "get_cubin_size",
                     "nvrtcGetCUBIN": "get_cubin", "nvrtcGetPTXSize": "get_ptx_size", "nvrtcGetPTX": "get_ptx"}
PROGRAM_TYPE = "rtc_cache::ProgramHandle"
# NVRTC functions without a program: left as they are.
PROGRAM_FREE = ("nvrtcVersion", "nvrtcGetErrorString", "nvrtcGetNumSupportedArchs", "nvrtcGetSupportedArchs")
LOCK_TYPES = ("std::unique_lock", "std::lock_guard", "std::scoped_lock")
ENV_SUFFIXES = {"dir": "DIR", "max_size": "MAX_SIZE", "record": "RECORD", "log": "LOG",
                "warm": "WARM", "warm_threads": "WARM_THREADS", "pch": "PCH", "minimal": "MINIMAL"}
# The options a recorded list (<prefix>_WARM) may give NVRTC in the generated runtime: exact
# options, and option prefixes followed by a value. They are the kinds the stubs and the layer pass
# (the rule's `options` of every rule in rules/ and golden/, -D of build defines, the target, the
# layer's -I); none writes a file or loads a PCH. The header is the same for every rule stacked on a
# layer (generate._same_cache), so the list is the layer's, not one rule's: a rule option outside it
# is an ApplyError (check_rule_options). The layer's PCH / -minimal options join when enabled.
# The policy is codemod.nvrtc_options' (one allow-list, also `codemod warm`'s and the rule loader's);
# the C++ check compares exact options and prefixes, so a valued option whose value is one digit
# (-O0..-O3) is listed whole rather than as a prefix.
_DIGIT_VALUED = {prefix for prefix, value in nvrtc_options.VALUED if value == r"[0-3]"}
LIST_OPTIONS = tuple(sorted((nvrtc_options.FLAGS - set(nvrtc_options.LAYER_OPTIONS))
                            | {prefix + str(n) for prefix in _DIGIT_VALUED for n in range(4)}))
LIST_OPTION_PREFIXES = tuple(prefix for prefix, _ in nvrtc_options.VALUED if prefix not in _DIGIT_VALUED) \
    + nvrtc_options.INCLUDE_PREFIXES
PCH_OPTIONS, MINIMAL_OPTIONS = nvrtc_options.PCH_OPTIONS, nvrtc_options.MINIMAL_OPTIONS


def list_options(pch: bool, minimal: bool) -> tuple[str, ...]:
    return LIST_OPTIONS + (PCH_OPTIONS if pch else ()) + (MINIMAL_OPTIONS if minimal else ())


def list_option(option: str, pch: bool = False, minimal: bool = False) -> bool:
    """As the header's list_option: whether a recorded list may give NVRTC `option`."""
    return option in list_options(pch, minimal) or any(
        option.startswith(p) and len(option) > len(p) for p in LIST_OPTION_PREFIXES)


def check_rule_options(options: dict, rule_id: str) -> None:
    """The rule's NVRTC options are ones a recorded list may carry (else the layer's warm-up would
    skip every program of the rule): an ApplyError naming the first that is not."""
    listed = list(options.get("always", [])) + [c["option"] for c in options.get("conditional", [])]
    listed += [o for opts in options.get("kernels", {}).values() for o in opts]
    for o in listed:
        if not list_option(o):
            raise ApplyError(f"migrate.options: {o} is not an option the disk cache's warm-up lists may carry "
                             "(it may write or load a file, or is unknown to the layer)",
                             where=f"{rule_id}/migrate/options",
                             hint="remove `cache:` from nvrtc_layer, or add the option's kind to "
                                  "codemod/nvrtc_options.py after checking NVRTC's docs")


_UNQUALIFIED_CALL = re.compile(r"(?<![\w:])(" + "|".join(PROGRAM_FUNCTIONS) + r")\s*\(")
_PROGRAM_TYPE = re.compile(r"(?<![\w:])nvrtcProgram\b")


def qualify_generated(text: str) -> str:
    """Program calls in code another layer feature generates into the same source (e.g. `extend`'s
    compile helpers) go through the cache too: one program handle type in the whole layer."""
    text = _UNQUALIFIED_CALL.sub(lambda m: f"rtc_cache::{PROGRAM_FUNCTIONS[m.group(1)]}(", text)
    return _PROGRAM_TYPE.sub(PROGRAM_TYPE, text)


def merge(edits: list[LayerEdit], others: list[tuple[int, int]]) -> list[LayerEdit]:
    """`edits` without those inside a range another feature's edit replaces (that edit's text
    carries the call, qualified by qualify_generated)."""
    return [e for e in edits if not any(start <= e.start < end for start, end in others)]


def settings(layer: dict) -> dict | None:
    """The rule's `nvrtc_layer.cache` with its defaults, or None when the rule does not ask for it."""
    cfg = layer.get(FEATURE)
    if not cfg:
        return None
    prefix = cfg["env_prefix"]
    header = cfg.get("header") or posixpath.join(posixpath.dirname(layer["header"]), "rtc_cache.h")
    namespace = cfg.get("namespace") or "::".join(layer["manager"].lstrip(":").split("::")[:-2])
    pch, minimal = bool(cfg.get("pch", False)), bool(cfg.get("minimal", False))
    return {"source": layer["source"], "header": header, "namespace": namespace, "default_dir": cfg["default_dir"],
            "pch": pch, "minimal": minimal, "list_options": list_options(pch, minimal), "test": cfg.get("test"),
            "list_option_prefixes": LIST_OPTION_PREFIXES,
            "env": {"prefix": prefix, **{k: f"{prefix}_{v}" for k, v in ENV_SUFFIXES.items()}}}


def _line(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1


def present(data: bytes, header: str) -> bool:
    """Whether the layer source already includes the cache header (a rule applied before added it)."""
    name = posixpath.basename(header).encode()
    return any(line.lstrip().startswith(b"#include") and name in line for line in data.splitlines())


def layer_edits(data: bytes, source_path: str, layer_header: str, cache_header: str) -> list[LayerEdit]:
    """The edits that route the layer's compile step through the cache. Raises ApplyError, naming
    file:line, when the layer does not have the expected shape (then nothing is changed)."""
    root = parse(data)
    edits: list[LayerEdit] = []
    compile_fn = None
    compile_call = None
    for n in _walk(root):
        if n.type == "type_identifier" and node_text(data, n) == "nvrtcProgram":
            edits.append(LayerEdit(source_path, n.start_byte, n.end_byte, PROGRAM_TYPE, "the cache's program handle"))
            continue
        if n.type != "identifier" or not node_text(data, n).startswith("nvrtc"):
            continue
        name = node_text(data, n)
        parent = n.parent
        called = parent is not None and parent.type == "call_expression" and parent.child_by_field_name("function") == n
        if name in PROGRAM_FUNCTIONS and called:
            edits.append(LayerEdit(source_path, n.start_byte, n.end_byte, f"rtc_cache::{PROGRAM_FUNCTIONS[name]}",
                                   f"{name}: the cache's program function"))
            if name == "nvrtcCompileProgram":
                compile_call = parent
                fn = parent
                while fn is not None and fn.type != "function_definition":
                    fn = fn.parent
                if compile_fn is not None and fn is not None and fn.id != compile_fn.id:
                    raise ApplyError(f"{source_path}:{_line(data, n.start_byte)}: a second function calls "
                                     "nvrtcCompileProgram; the disk cache expects one compile function in the layer",
                                     hint="remove `cache:` from the rule's nvrtc_layer section")
                compile_fn = fn
        elif name in PROGRAM_FUNCTIONS or (name not in PROGRAM_FREE and called):
            raise ApplyError(f"{source_path}:{_line(data, n.start_byte)}: the layer uses {name}, which the disk "
                             "cache does not provide", hint="remove `cache:` from the rule's nvrtc_layer section")
    if compile_fn is None:
        raise ApplyError(f"{source_path}: no call of nvrtcCompileProgram; the disk cache needs the layer's compile "
                         "function", hint="check nvrtc_layer.source in the rule")
    lock, var = _lock_edit(data, source_path, compile_fn)
    edits += [lock, *_unlocked_compile(data, source_path, compile_call, var)]
    edits.append(_include_edit(data, source_path, layer_header, cache_header))
    return edits


def _unlocked_compile(data: bytes, source_path: str, call, var: str) -> list[LayerEdit]:
    """`<var>.unlock();` before the statement that compiles, `<var>.lock();` after it: the layer's
    mutex released, in the compile function, while NVRTC or the disk cache works."""
    stmt = call
    while stmt.parent is not None and stmt.parent.type != "compound_statement":
        stmt = stmt.parent
    if stmt.parent is None or stmt.type not in ("declaration", "expression_statement"):
        raise ApplyError(f"{source_path}:{_line(data, call.start_byte)}: nvrtcCompileProgram is not called in a "
                         "statement of its own (a declaration or an expression statement)",
                         hint="remove `cache:` from the rule's nvrtc_layer section")
    line = data.rfind(b"\n", 0, stmt.start_byte) + 1
    indent = data[line:stmt.start_byte].decode()
    if indent.strip():
        raise ApplyError(f"{source_path}:{_line(data, call.start_byte)}: the statement calling nvrtcCompileProgram "
                         "does not start its line", hint="remove `cache:` from the rule's nvrtc_layer section")
    why = "the layer's mutex released while NVRTC or the disk cache works"
    return [LayerEdit(source_path, line, line, f"{indent}{var}.unlock();  // launches and other variants go on\n", why),
            LayerEdit(source_path, stmt.end_byte, stmt.end_byte, f"\n{indent}{var}.lock();", why)]


def _lock_edit(data: bytes, source_path: str, fn) -> tuple[LayerEdit, str]:
    """The compile function's first lock statement (`std::unique_lock<M> name(mutex);`) becomes
    `rtc_cache::CompileLock name(mutex, <first parameter>);`; and the lock's name."""
    body = fn.child_by_field_name("body")
    params = fn.child_by_field_name("declarator")
    while params is not None and params.type != "function_declarator":
        params = params.child_by_field_name("declarator")
    first = None
    if params is not None:
        plist = params.child_by_field_name("parameters")
        decls = [c for c in plist.named_children if c.type == "parameter_declaration"] if plist else []
        if decls:
            d = decls[0].child_by_field_name("declarator")
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator") or (d.named_children[-1] if d.named_children else None)
            first = node_text(data, d) if d is not None else None
    where = f"{source_path}:{_line(data, fn.start_byte)}"
    if first is None:
        raise ApplyError(f"{where}: the compile function has no named first parameter (the kernel label)",
                         hint="remove `cache:` from the rule's nvrtc_layer section")
    for stmt in body.named_children:
        if stmt.type != "declaration":
            continue
        type_node = stmt.child_by_field_name("type")
        decl = stmt.child_by_field_name("declarator")
        if type_node is None or decl is None or not node_text(data, type_node).startswith(LOCK_TYPES):
            continue
        if decl.type == "function_declarator":       # name(mutex)
            var = node_text(data, decl.child_by_field_name("declarator"))
            args = [c for c in decl.child_by_field_name("parameters").named_children]
            mutex = node_text(data, args[0]) if len(args) == 1 else None
        elif decl.type == "init_declarator":          # name{mutex} or name(mutex)
            var = node_text(data, decl.child_by_field_name("declarator"))
            value = decl.child_by_field_name("value")
            args = value.named_children if value is not None else []
            mutex = node_text(data, args[0]) if len(args) == 1 else None
        else:
            continue
        if mutex is None:
            raise ApplyError(f"{source_path}:{_line(data, stmt.start_byte)}: the compile lock takes more than one "
                             "argument", hint="remove `cache:` from the rule's nvrtc_layer section")
        if any(n.type == "identifier" and node_text(data, n) == var for n in _walk(body) if n.start_byte >= stmt.end_byte):
            raise ApplyError(f"{source_path}:{_line(data, stmt.start_byte)}: the compile lock `{var}` is used again "
                             "in the function", hint="remove `cache:` from the rule's nvrtc_layer section")
        return LayerEdit(source_path, stmt.start_byte, stmt.end_byte,
                         f"rtc_cache::CompileLock {var}({mutex}, {first});  // the variant's mutex, then {mutex}",
                         "per-variant compile: the variant's mutex, then the layer's"), var
    raise ApplyError(f"{where}: the compile function takes no lock at its top level ({', '.join(LOCK_TYPES)})",
                     hint="remove `cache:` from the rule's nvrtc_layer section")


def _include_edit(data: bytes, source_path: str, layer_header: str, cache_header: str) -> LayerEdit:
    """`#include "<cache header>"` after the layer source's include of its own header, spelled with
    the same folder prefix."""
    name = posixpath.basename(layer_header)
    for inc in includes(data):
        if not inc.system and posixpath.basename(inc.name) == name:
            spelled = posixpath.join(posixpath.dirname(inc.name), posixpath.basename(cache_header))
            return LayerEdit(source_path, inc.end, inc.end, f'#include "{spelled}"\n', "the disk cache's header")
    raise ApplyError(f"{source_path}: no #include of {name}", hint="check nvrtc_layer.source and header in the rule")
