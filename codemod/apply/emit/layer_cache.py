"""Layer feature `cache` (issues 17, 29): the target's NVRTC layer gets per-label compiles and an
opt-in disk cache shared by the processes of a machine. Detected (the layer source already includes the
generated header: nothing to do) or added: the header from templates/apply/layer/rtc_cache.h.j2, and
edits of the layer's compile function found with tree-sitter, as ordinary code at its call sites: a
mutex per label taken before the layer's lock; the layer's lock released while the program's key is
computed, its entry loaded, or NVRTC compiles it; a hit inserting the loaded kernel as the function's
own tail does; after NVRTC, `store` and the layer's lock taken again. The layer's NVRTC calls are
unchanged. Python's copy of the key and entry format: codemod/verify/rtc_cache.py."""

from __future__ import annotations

import posixpath

from ...errors import ApplyError
from ..base.source import _walk, includes, node_text, parse
from .layer import COMPILE_PROGRAM, LayerEdit

FEATURE = "cache"
LOCK_TYPE = "std::unique_lock"
HINT = "remove `cache:` from the rule's nvrtc_layer section"
# the names the edits declare in the compile function
CACHED_NAME, CACHED_CODE = "cached_name", "cached_code"


def settings(layer: dict) -> dict | None:
    """The rule's `nvrtc_layer.cache` with its defaults, or None when the rule does not ask for it."""
    cfg = layer.get(FEATURE)
    if not cfg:
        return None
    prefix = cfg["env_prefix"]
    header = cfg.get("header") or posixpath.join(posixpath.dirname(layer["header"]), "rtc_cache.h")
    namespace = cfg.get("namespace") or "::".join(layer["manager"].lstrip(":").split("::")[:-2])
    return {"source": layer["source"], "header": header, "namespace": namespace, "default_dir": cfg["default_dir"],
            "test": cfg.get("test"), "env": {"prefix": prefix, "dir": f"{prefix}_DIR"}}


def _line(data: bytes, offset: int) -> int:
    return data[:offset].count(b"\n") + 1


def present(data: bytes, header: str) -> bool:
    """Whether the layer source already includes the cache header (a rule applied before added it)."""
    name = posixpath.basename(header).encode()
    return any(line.lstrip().startswith(b"#include") and name in line for line in data.splitlines())


def _calls(data: bytes, node, name: str) -> list:
    return [n for n in _walk(node) if n.type == "call_expression"
            and node_text(data, n.child_by_field_name("function")) == name]


def _args(data: bytes, call) -> list[str]:
    return [node_text(data, a) for a in call.child_by_field_name("arguments").named_children if a.type != "comment"]


def _top(stmt, body):
    """The statement of `body` (the function's block) holding node `stmt`."""
    while stmt.parent is not None and stmt.parent.id != body.id:
        stmt = stmt.parent
    return stmt


def _identifiers(node) -> list:
    return [n for n in _walk(node) if n.type == "identifier"]


def _declared(data: bytes, node) -> dict[str, int]:
    """Names the declarations inside `node` declare -> where."""
    out = {}
    for n in _walk(node):
        if n.type != "declaration":
            continue
        for d in n.children_by_field_name("declarator"):
            while d is not None and d.type != "identifier":
                d = d.child_by_field_name("declarator")
            if d is not None:
                out.setdefault(node_text(data, d), d.start_byte)
    return out


def _line_start(data: bytes, offset: int) -> tuple[int, str]:
    line = data.rfind(b"\n", 0, offset) + 1
    return line, data[line:offset].decode()


def layer_edits(data: bytes, source_path: str, layer_header: str, cache_header: str,
                others: list[tuple[int, int, str]] = ()) -> list[LayerEdit]:
    """The edits that give the layer's compile function per-label compiles and the disk cache.
    `others`: (start, end, text) of what other layer features replace in the same source (a call
    they route through a helper of theirs: refused, unless it is compile_program's, which gives
    NVRTC the same arguments). Raises ApplyError, naming file:line, when the layer does not have
    the expected shape (then nothing is changed)."""
    root = parse(data)
    compiles = _calls(data, root, "nvrtcCompileProgram")
    fns = set()
    for c in compiles:
        fn = c
        while fn is not None and fn.type != "function_definition":
            fn = fn.parent
        fns.add(fn.id if fn is not None else None)
    if not compiles or None in fns:
        raise ApplyError(f"{source_path}: no function calls nvrtcCompileProgram; the disk cache needs the layer's "
                         "compile function", hint="check nvrtc_layer.source in the rule")
    if len(fns) > 1:
        raise ApplyError(f"{source_path}:{_line(data, compiles[1].start_byte)}: a second function calls "
                         "nvrtcCompileProgram; the disk cache expects one compile function in the layer", hint=HINT)
    fn = compiles[0]
    while fn.type != "function_definition":
        fn = fn.parent
    body = fn.child_by_field_name("body")
    where = lambda node: f"{source_path}:{_line(data, node.start_byte)}"  # noqa: E731

    def one(name: str):
        found = _calls(data, body, name)
        if len(found) != 1:
            raise ApplyError(f"{where(fn)}: the compile function calls {name} {len(found)} times; the disk cache "
                             "needs one call (one program, one name expression)", hint=HINT)
        callee = found[0].child_by_field_name("function")
        if any(s < found[0].end_byte and found[0].start_byte < e
               and (s, e, t) != (callee.start_byte, callee.end_byte, COMPILE_PROGRAM) for s, e, t in others):
            raise ApplyError(f"{where(found[0])}: another layer feature (nvrtc_layer.extend) replaces {name}; the disk "
                             "cache keys the compile function's own NVRTC calls", hint=HINT)
        return found[0]

    create, named, compile_call = one("nvrtcCreateProgram"), one("nvrtcAddNameExpression"), one("nvrtcCompileProgram")
    lowered_call = one("nvrtcGetLoweredName")
    code_calls = _calls(data, body, "nvrtcGetCUBIN") + _calls(data, body, "nvrtcGetPTX")
    create_args, compile_args = _args(data, create), _args(data, compile_call)
    lowered_args = lowered_call.child_by_field_name("arguments").named_children
    if len(create_args) != 6 or len(compile_args) != 3 or len(lowered_args) != 3 or not code_calls:
        raise ApplyError(f"{where(create)}: the compile function's NVRTC calls are not nvrtcCreateProgram, "
                         "nvrtcAddNameExpression, nvrtcCompileProgram, nvrtcGetLoweredName and nvrtcGetCUBIN or "
                         "nvrtcGetPTX with their parameters", hint=HINT)
    first = lambda node: _identifiers(node)[0] if _identifiers(node) else None  # noqa: E731
    program = first(create.child_by_field_name("arguments").named_children[0])
    lowered = first(lowered_args[2])
    codes = {node_text(data, first(c.child_by_field_name("arguments").named_children[1])) for c in code_calls
             if len(c.child_by_field_name("arguments").named_children) == 2}
    if program is None or lowered is None or len(codes) != 1:
        raise ApplyError(f"{where(lowered_call)}: the lowered name and the compiled code are not each one "
                         "variable of the compile function", hint=HINT)
    program, lowered, code = node_text(data, program), node_text(data, lowered), codes.pop()

    lock, var, label = _compile_lock(data, source_path, fn)
    s_create = _top(create, body)
    s_out = max((_top(n, body) for n in [lowered_call, *code_calls]), key=lambda s: s.end_byte)
    if not (lock.end_byte <= s_create.start_byte < _top(compile_call, body).start_byte <= s_out.start_byte):
        raise ApplyError(f"{where(create)}: the compile function does not lock, create the program, compile it and "
                         "read its output in that order", hint=HINT)
    # the key's inputs, the nvrtc calls' arguments, must be declared before the program is created
    declared = _declared(data, body)
    inputs = [*create.child_by_field_name("arguments").named_children[1:],
              *named.child_by_field_name("arguments").named_children[1:],
              *compile_call.child_by_field_name("arguments").named_children[1:]]
    for node in inputs:
        for i in _identifiers(node):
            at = declared.get(node_text(data, i))
            if at is not None and at >= s_create.start_byte:
                raise ApplyError(f"{where(i)}: `{node_text(data, i)}` is declared after the program is created; "
                                 "the disk cache's key is computed before it", hint=HINT)
    # the kernel the function inserts at its end, from the lowered name (or a copy of it) and the code
    aliases = {lowered}
    for stmt in body.named_children:
        if s_create.start_byte <= stmt.start_byte <= s_out.start_byte and stmt.type == "declaration":
            for d in stmt.children_by_field_name("declarator"):
                value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                if d.type == "function_declarator":    # `std::string name(lowered);` as tree-sitter reads it
                    value = d.child_by_field_name("parameters")
                vals = [v for v in (value.named_children if value is not None and value.type in
                                    ("argument_list", "initializer_list", "parameter_list") else [value])
                        if v is not None]
                if len(vals) == 1 and node_text(data, vals[0]) == lowered:
                    aliases.add(node_text(data, d.child_by_field_name("declarator")))
    region = {n: at for n, at in declared.items() if s_create.start_byte <= at < s_out.end_byte}
    tail = [s for s in body.named_children if s.start_byte >= s_out.end_byte and s.type != "comment"
            and program not in {node_text(data, i) for i in _identifiers(s)}]
    if not tail:
        raise ApplyError(f"{where(s_out)}: nothing after the compile function's NVRTC calls keeps the kernel",
                         hint=HINT)
    copied = []
    for s in tail:
        pos, out = s.start_byte, []
        for i in _identifiers(s):
            name = node_text(data, i)
            if name in region and name not in aliases and name != code:
                raise ApplyError(f"{where(i)}: the compile function keeps `{name}`, which its NVRTC calls make; the "
                                 "disk cache restores the lowered name and the code only", hint=HINT)
            if name in aliases or name == code:
                out.append(data[pos:i.start_byte].decode())
                out.append(CACHED_NAME if name in aliases else CACHED_CODE)
                pos = i.end_byte
        out.append(data[pos:s.end_byte].decode())
        copied.append("".join(out).replace("\n", "\n  "))

    line, indent = _line_start(data, s_create.start_byte)
    key_call = _wrapped(f"{indent}  cache_key = rtc_cache::key(",
                        [*create_args[1:], *_args(data, named)[1:], *compile_args[1:]], ");")
    hit = "\n".join(f"{indent}  {t}" for t in copied)
    load = (f"\n{indent}// NVRTC runs without the layer's lock: launches and other labels go on meanwhile.\n"
            f"{indent}{var}.unlock();\n"
            f"{indent}// A program compiled before, by this process or another: its entry in the disk cache.\n"
            f"{indent}std::string cache_key;  // empty: the disk cache is off\n"
            f"{indent}if (rtc_cache::enabled()) {{\n{key_call}\n{indent}}}\n"
            f"{indent}const rtc_cache::FileLock file_lock(cache_key);  // other processes wait, then load it\n"
            f"{indent}std::string {CACHED_NAME}, {CACHED_CODE};\n"
            f"{indent}if (!cache_key.empty() && rtc_cache::load(cache_key, &{CACHED_NAME}, &{CACHED_CODE})) {{\n"
            f"{indent}  {var}.lock();\n{hit}\n{indent}  return;\n{indent}}}\n\n")
    store = (f"\n{indent}if (!cache_key.empty()) rtc_cache::store(cache_key, {lowered}, {code});"
             f"\n{indent}{var}.lock();")
    lock_line, lock_indent = _line_start(data, lock.start_byte)
    label_fn = ("// One mutex per kernel label: a label compiles once, while other labels compile and launch.\n"
                "std::mutex &label_mutex(const std::string &label) {\n"
                "  static std::mutex mutex;\n"
                "  static std::map<std::string, std::mutex> mutexes;  // a map's nodes never move\n"
                "  std::lock_guard<std::mutex> lock(mutex);\n"
                "  return mutexes[label];\n"
                "}\n")
    fn_line, label_fn = _helper_place(data, fn, label_fn)
    why = "per-label compiles and the disk cache"
    return [LayerEdit(source_path, fn_line, fn_line, label_fn, why),
            LayerEdit(source_path, lock_line, lock_line,
                      f"{lock_indent}std::lock_guard<std::mutex> label_lock(label_mutex({label}));  "
                      "// then the layer's lock\n", why),
            LayerEdit(source_path, line, line, load, why),
            LayerEdit(source_path, s_out.end_byte, s_out.end_byte, store, why),
            _include_edit(data, source_path, layer_header, cache_header)]


def _wrapped(opening: str, args: list[str], closing: str, width: int = 100) -> str:
    """`opening` + the arguments + `closing`, wrapped at `width` with the arguments aligned after
    `opening` (a formatter's result on the target's own files)."""
    args = [" ".join(a.split()) for a in args]
    lines, current = [], opening
    for i, a in enumerate(args):
        piece = a + (", " if i + 1 < len(args) else closing)
        if len(current) + len(piece.rstrip()) > width and current.strip() != opening.strip():
            lines.append(current.rstrip())
            current = " " * len(opening)
        current += piece
    return "\n".join([*lines, current.rstrip()])


def _helper_place(data: bytes, fn, text: str) -> tuple[int, str]:
    """Where a helper of the compile function goes, and its text: at the end of the anonymous
    namespace before the function when the source has one (TE's and the golden layers' helpers live
    there), else in one of its own right above the function and its comment."""
    anonymous = [n for n in fn.parent.named_children if n.type == "namespace_definition"
                 and n.child_by_field_name("name") is None and n.end_byte <= fn.start_byte]
    if anonymous:
        closing = anonymous[-1].child_by_field_name("body").children[-1]
        line = _line_start(data, closing.start_byte)[0]
        blank = data[:line].endswith(b"\n\n")
        return line, ("" if blank else "\n") + text + ("\n" if blank else "")
    return _before_comments(data, fn), "namespace {\n\n" + text + "\n}  // namespace\n\n"


def _before_comments(data: bytes, fn) -> int:
    """The start of the line of `fn`, or of the comment lines right above it."""
    start = fn
    prev = start.prev_sibling
    while prev is not None and prev.type == "comment" and prev.end_point[0] + 1 >= start.start_point[0]:
        start, prev = prev, prev.prev_sibling
    return _line_start(data, start.start_byte)[0]


def _compile_lock(data: bytes, source_path: str, fn):
    """The compile function's lock statement (`std::unique_lock<M> name(mutex);` at its top level),
    the lock's name and the function's first parameter (the kernel label)."""
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
        raise ApplyError(f"{where}: the compile function has no named first parameter (the kernel label)", hint=HINT)
    body = fn.child_by_field_name("body")
    for stmt in body.named_children:
        type_node = stmt.child_by_field_name("type") if stmt.type == "declaration" else None
        decl = stmt.child_by_field_name("declarator") if type_node is not None else None
        if decl is None or not node_text(data, type_node).startswith(("std::unique_lock", "std::lock_guard",
                                                                        "std::scoped_lock")):
            continue
        if not node_text(data, type_node).startswith(LOCK_TYPE):
            raise ApplyError(f"{source_path}:{_line(data, stmt.start_byte)}: the compile function's lock is not a "
                             "std::unique_lock, which the compile releases while NVRTC runs", hint=HINT)
        var = node_text(data, decl.child_by_field_name("declarator"))
        if any(n.type == "identifier" and node_text(data, n) == var for n in _walk(body) if n.start_byte >= stmt.end_byte):
            raise ApplyError(f"{source_path}:{_line(data, stmt.start_byte)}: the compile lock `{var}` is used again "
                             "in the function", hint=HINT)
        return stmt, var, first
    raise ApplyError(f"{where}: the compile function takes no lock at its top level (std::unique_lock)", hint=HINT)


def _include_edit(data: bytes, source_path: str, layer_header: str, cache_header: str) -> LayerEdit:
    """`#include "<cache header>"` after the layer source's include of its own header, spelled with
    the same folder prefix."""
    name = posixpath.basename(layer_header)
    for inc in includes(data):
        if not inc.system and posixpath.basename(inc.name) == name:
            spelled = posixpath.join(posixpath.dirname(inc.name), posixpath.basename(cache_header))
            return LayerEdit(source_path, inc.end, inc.end, f'#include "{spelled}"\n', "the disk cache's header")
    raise ApplyError(f"{source_path}: no #include of {name}", hint="check nvrtc_layer.source and header in the rule")
