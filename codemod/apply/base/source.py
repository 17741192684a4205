"""Tree-sitter queries apply needs beyond the frontend's scan: includes, host-only function
definitions, kernel parameter types and template-ids naming a kernel. Byte ranges, never regexes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser

from .changeset import RTC_GUARD, RTC_IFNDEF


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_cuda.language()))


# NOTE: apply asks for the trees of the same headers again and again (TE's activation rule: 2,265
# parses of a few hundred distinct texts, a third of a warm run); a tree is a pure function of the
# text and nothing edits it, so trees are kept per content.
@lru_cache(maxsize=1024)
def _tree(data: bytes):
    return _parser().parse(data)


def parse(data: bytes) -> Node:
    return _tree(data).root_node


def node_text(data: bytes, node: Node) -> str:
    """The source text a tree-sitter node spans."""
    return data[node.start_byte:node.end_byte].decode()


def _walk(node: Node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


@dataclass
class Include:
    name: str          # as spelled between the quotes or brackets
    system: bool       # <...>
    start: int
    end: int           # end of the directive line (after the newline)
    rtc_guarded: bool = False   # in a branch not taken under NVRTC (`#ifndef __CUDACC_RTC__`)
    name_start: int = 0         # byte range of `name` (between the quotes or brackets)
    name_end: int = 0
    nested: bool = False        # inside a namespace, class or function body (a data include such as
                                # TE's `namespace detail { #include "string_code_....h" }`)


def _nested(node: Node) -> bool:
    """Whether a directive sits inside a declaration (a namespace body, a class, a function), not at
    file scope (preprocessor conditionals do not count, nor an ERROR node: tree-sitter's reading of
    a file whose macro invocations end without `;`, bitsandbytes' `MAKE_k(...)` lines)."""
    n = node.parent
    while n is not None and n.type != "translation_unit":
        if not n.type.startswith("preproc_") and n.type != "ERROR":
            return True
        n = n.parent
    return False


def _rtc_guarded(node: Node, data: bytes) -> bool:
    """Whether an include sits in a branch NVRTC does not take: the then-branch of
    `#ifndef __CUDACC_RTC__` / `#if !defined(__CUDACC_RTC__)`, or the `#else` of
    `#ifdef __CUDACC_RTC__` / `#if defined(__CUDACC_RTC__)`. Other conditions: False."""
    child, n = node, node.parent
    while n is not None:
        if n.type in ("preproc_if", "preproc_ifdef"):
            in_else = child.type in ("preproc_else", "preproc_elif", "preproc_elifdef")
            sense = _rtc_condition(n, data)     # True: the then-branch is taken under NVRTC
            if sense is not None and sense == in_else:
                return True
        child, n = n, n.parent
    return False


def _rtc_condition(n: Node, data: bytes) -> bool | None:
    """For a conditional testing only __CUDACC_RTC__: whether its then-branch is taken under NVRTC."""
    if n.type == "preproc_ifdef":
        name = n.child_by_field_name("name")
        if name is None or data[name.start_byte:name.end_byte] != b"__CUDACC_RTC__":
            return None
        return data[n.start_byte:name.start_byte].strip() == b"#ifdef"
    cond = n.child_by_field_name("condition")
    if cond is None:
        return None
    text = b"".join(data[cond.start_byte:cond.end_byte].split())
    if text in (b"defined(__CUDACC_RTC__)", b"defined__CUDACC_RTC__"):
        return True
    if text in (b"!defined(__CUDACC_RTC__)", b"!defined__CUDACC_RTC__"):
        return False
    return None


def includes(data: bytes) -> list[Include]:
    return list(_includes(data))


@lru_cache(maxsize=1024)
def _includes(data: bytes) -> tuple[Include, ...]:
    out = []
    for n in _walk(parse(data)):
        if n.type == "preproc_include":
            path = n.child_by_field_name("path")
            text = data[path.start_byte:path.end_byte].decode()
            out.append(Include(text[1:-1], text.startswith("<"), n.start_byte, n.end_byte,
                               _rtc_guarded(n, data), path.start_byte + 1, path.end_byte - 1, _nested(n)))
    return tuple(sorted(out, key=lambda i: i.start))


def enumerators(data: bytes) -> set[str]:
    """The names of every enumerator a file declares."""
    return set(_enumerators(data))


@lru_cache(maxsize=1024)
def _enumerators(data: bytes) -> frozenset[str]:
    return frozenset(node_text(data, n.child_by_field_name("name")) for n in _walk(parse(data))
                     if n.type == "enumerator" and n.child_by_field_name("name") is not None)


def device_variables(data: bytes) -> list[str]:
    """Names of the mutable `__device__` variables declared at namespace or file scope (not
    `__constant__`, `const` or `constexpr`, not functions): each NVRTC module holds its own copy."""
    out = []
    for n in _walk(parse(data)):
        if n.type != "declaration" or n.parent is None or n.parent.type not in ("translation_unit", "declaration_list"):
            continue
        kinds = [c.type for c in n.children]
        if "__device__" not in kinds or "function_declarator" in kinds:
            continue
        if any(c.type == "type_qualifier" and data[c.start_byte:c.end_byte] in (b"const", b"constexpr")
               for c in n.children):
            continue
        for d in n.children:
            while d is not None and d.type in ("array_declarator", "init_declarator"):
                d = d.child_by_field_name("declarator")
            if d is not None and d.type == "identifier":
                out.append(data[d.start_byte:d.end_byte].decode())
    return out


_DEVICE_TOKENS = (b"__device__", b"__global__", b"__host__")


def _split_device_head(data: bytes, start: int) -> bool:
    """Whether the definition tree-sitter starts at `start` ends a kernel or device function whose
    execution space a preprocessor block cut off (`template <...> __global__ void\n#if ...\n
    __launch_bounds__(N)\n#endif\n k(...) {...}`, TE's compute_rowwise_amax_kernel, CM0202):
    tree-sitter reads `k(...) {...}` alone, with no qualifier. Guarding it would leave NVRTC the
    dangling head; left visible, a wrong call is the precheck's to catch."""
    before = data[:start]
    cut = max(before.rfind(b";"), before.rfind(b"}"), before.rfind(b"{"))
    return any(tok in before[cut + 1:] for tok in _DEVICE_TOKENS)


def kernel_definition(path: str, data: bytes, name: str) -> tuple[int, int] | None:
    """(start, end) of the definition of kernel `name` in a file, its template header included: the
    frontend scanner's, or, for a kernel whose `__global__` head a preprocessor block cuts from its
    declarator (CM0202, which the scanner does not see as a kernel), the definition tree-sitter reads
    as `name(...) {...}` from the head's start on (after the last `;`, `{` or `}` before it)."""
    from ...frontend.treesitter import scan_bytes

    decl = next((d for d in scan_bytes(path, data).kernels if d.name == name and d.is_definition), None)
    if decl is not None:
        return decl.start, decl.end
    for node in _walk(parse(data)):
        if node.type != "function_definition" or not _split_device_head(data, node.start_byte):
            continue
        d = node.child_by_field_name("declarator")
        while d is not None and d.type not in ("identifier", "field_identifier"):
            d = d.child_by_field_name("declarator")
        if d is None or node_text(data, d) != name:
            continue
        before = data[:node.start_byte]
        cut = max(before.rfind(b";"), before.rfind(b"}"), before.rfind(b"{")) + 1
        head = data[cut:node.start_byte]
        at = head.find(b"template")
        if at < 0:
            continue
        return cut + at, node.end_byte
    return None


# C/C++ comments, line and block
_COMMENTS = re.compile(rb"//[^\n]*|/\*.*?\*/", re.S)


def host_only_functions(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of namespace- or file-scope function definitions and prototypes with no CUDA
    execution-space qualifier and not `constexpr` (host-only), template headers included;
    adjacent ones (blanks and comments between) merged."""
    ranges: list[tuple[int, int]] = []

    def visit(container: Node) -> None:
        for child in container.children:
            if child.type == "namespace_definition":
                body = child.child_by_field_name("body")
                if body is not None:
                    visit(body)
                continue
            if child.type in ("preproc_ifdef", "preproc_if"):
                sense = _rtc_condition(child, data)     # False: `#ifndef __CUDACC_RTC__`
                alt = child.child_by_field_name("alternative")
                if sense is False:                      # already hidden from NVRTC (a second
                    if alt is not None:                 # rule's apply, or the library's own)
                        visit(alt)
                    continue
                if sense is True:                       # `#ifdef __CUDACC_RTC__`: NVRTC-only
                    continue
                visit(child)
                continue
            if child.type == "preproc_else":
                visit(child)
                continue
            inner = child
            while inner.type == "template_declaration":
                inner = next((c for c in inner.children if c.type in
                              ("function_definition", "template_declaration", "declaration")), inner)
                if inner is child or inner.type == "declaration":
                    break
            if inner.type != "function_definition" and not _is_prototype(inner):
                continue
            body = inner.child_by_field_name("body")
            head = data[child.start_byte:body.start_byte if body is not None else child.end_byte]
            if any(tok in head for tok in _DEVICE_TOKENS) or re.search(rb"\bconstexpr\b", head):
                continue    # constexpr: device code may call it (--expt-relaxed-constexpr, -default-device)
            if _split_device_head(data, child.start_byte):
                continue
            ranges.append((child.start_byte, child.end_byte))

    visit(parse(data))
    merged: list[tuple[int, int]] = []
    for start, end in ranges:     # with only blanks and comments (the next one's) between
        if merged and not _COMMENTS.sub(b"", data[merged[-1][1]:start]).strip():
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def host_variable_qualifiers(data: bytes) -> list[tuple[int, int]]:
    """Byte ranges of the `__host__` of namespace-scope variables declared `__device__ __host__`
    (TE: `__device__ __host__ constexpr size_t kScaleColAlign`): nvcc takes it, NVRTC rejects it
    (`attribute "__host__" does not apply here`); under NVRTC the variable is `__device__` alone."""
    out: list[tuple[int, int]] = []

    def visit(container: Node) -> None:
        for child in container.children:
            if child.type == "namespace_definition":
                body = child.child_by_field_name("body")
                if body is not None:
                    visit(body)
                continue
            if child.type in ("preproc_ifdef", "preproc_if", "preproc_else"):
                if child.type == "preproc_else" or _rtc_condition(child, data) is None:
                    visit(child)
                continue
            if child.type != "declaration" or any(c.type == "function_declarator" for c in _walk(child)):
                continue
            tokens = {c.type: c for c in child.children}
            if "__host__" in tokens and "__device__" in tokens:
                out.append((tokens["__host__"].start_byte, tokens["__host__"].end_byte))

    visit(parse(data))
    return out


def _is_prototype(node: Node) -> bool:
    """A function declaration without a body (`void f(const NVTETensor x);`), not a variable of
    function-pointer type: host prototypes name host-only types NVRTC does not see."""
    if node.type != "declaration":
        return False
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type in ("pointer_declarator", "reference_declarator"):
        decl = decl.child_by_field_name("declarator")
    if decl is None or decl.type != "function_declarator":
        return False
    inner = decl.child_by_field_name("declarator")
    return inner is not None and inner.type != "parenthesized_declarator"


def comment_start(data: bytes, start: int) -> int:
    """Start of the comments directly above the line of `start` (`//` lines, or a `/* ... */`
    block: a doc comment), kept with their code."""
    line = data.rfind(b"\n", 0, start) + 1
    while line > 0:
        prev = data.rfind(b"\n", 0, line - 1) + 1
        text = data[prev:line].strip()
        if text.startswith(b"//"):
            line = prev
        elif text.endswith(b"*/") and (opening := data.rfind(b"/*", 0, line)) >= 0:
            line = data.rfind(b"\n", 0, opening) + 1
        else:
            break
    return line


@dataclass
class KernelSignature:
    template_params: str        # `<int nvec, ...>`
    param_types: list[str]      # `const InputType *`, ...
    param_decls: list[str]      # `const InputType *in`, ...
    declaration: str = ""       # the text from `template` to the parameter list's `)`, as written


_TOP_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict)\b")


def value_type(t: str) -> str:
    """A parameter type without its top-level qualifiers (`const float *__restrict__` ->
    `const float *`, `const size_t` -> `size_t`, no `__grid_constant__`): they are not part of the
    function type, and a pointer to a `__restrict__` parameter does not convert to
    `const void *`."""
    depth, cut = 0, -1
    for i, c in enumerate(t):
        depth += c == "<"
        depth -= c == ">"
        if depth == 0 and c in "*&":
            cut = i
    if cut >= 0:
        return (t[:cut + 1] + _TOP_QUALIFIERS.sub("", t[cut + 1:])).strip()
    words = t.split()
    while words and words[0] in ("const", "volatile", "__grid_constant__"):
        words.pop(0)
    while words and words[-1] in ("const", "volatile", "__restrict__", "__restrict"):
        words.pop()
    return " ".join(words)


def kernel_signature(data: bytes, start: int, end: int) -> KernelSignature:
    """Parameter types of the `__global__` template defined in data[start:end] (the frontend's
    KernelDecl range)."""
    root = parse(data[start:end])
    text = data[start:end]
    tparams = next(n for n in _walk(root) if n.type == "template_parameter_list")
    owner = next(n for n in _walk(root) if n.type in ("function_definition", "declaration"))
    decl = owner.child_by_field_name("declarator")
    while decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    plist = decl.child_by_field_name("parameters")
    types, decls = [], []
    for p in plist.named_children:
        if p.type != "parameter_declaration":
            continue
        ident = next((n for n in _walk(p.child_by_field_name("declarator") or p) if n.type == "identifier"), None)
        full = text[p.start_byte:p.end_byte].decode()
        decls.append(" ".join(full.split()))
        if ident is not None and p.child_by_field_name("declarator") is not None:
            cut = (text[p.start_byte:ident.start_byte] + text[ident.end_byte:p.end_byte]).decode()
        else:
            cut = full
        types.append(value_type(" ".join(cut.split()).strip()))
    return KernelSignature(" ".join(text[tparams.start_byte:tparams.end_byte].decode().split()), types, decls,
                           text[:plist.end_byte].decode())


def first_argument(data: bytes, at: int) -> int:
    """Where the first argument of the call at `at` starts (`at` itself when there is no call)."""
    m = re.compile(rb"(::)?\w+\s*\(\s*").match(data, at)
    return m.end() if m else at


def template_id_at(data: bytes, at: int, name: str) -> tuple[str, int] | None:
    """The text (whitespace collapsed) and end of `name<...>` or `&name<...>` (optionally
    qualified) at `at`, its angle brackets balanced and holding no parenthesis, brace or
    semicolon; else None."""
    m = re.compile(rb"(&\s*)?(\w+::)*" + re.escape(name.encode()) + rb"\s*<").match(data, at)
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(data) and depth:
        c = data[i:i + 1]
        if c in b"(){};":
            return None
        depth += 1 if c == b"<" else -1 if c == b">" else 0
        i += 1
    return (" ".join(data[at:i].decode().split()), i) if depth == 0 else None


# A line that is one macro invocation at file scope with no `;` after it (bitsandbytes'
# `MAKE_kQuantizeBlockwise(half, 4096, 4, 0, General8bit)`), not continuing a #define.
_BARE_INVOCATION = re.compile(rb"(?m)(?<![\\]\n)^[A-Za-z_]\w*\([^;{}\n]*\)[ \t]*$")


def without_bare_invocations(data: bytes) -> bytes:
    """`data` with such lines blanked (same offsets): tree-sitter reads the rest of the file, their
    `#define`s included, as it reads a file without them, instead of as ERROR nodes."""
    return _BARE_INVOCATION.sub(lambda m: b" " * len(m.group(0)), data)


def template_ids(data: bytes, names: set[str]) -> list[tuple[int, int, str]]:
    """(start, end, name) of template-ids `name<...>` (optionally qualified) outside launches; an
    address-of `&name<...>` is in the range (the stub returns an object, not a function). Not in
    macro bodies (a `#define`'s text is no handle)."""
    out = []
    for n in _walk(parse(without_bare_invocations(data))):
        if n.type != "template_function":
            continue
        name = n.child_by_field_name("name")
        ident = data[name.start_byte:name.end_byte].decode()
        if ident not in names:
            continue
        top = n
        while top.parent is not None and top.parent.type == "qualified_identifier":
            top = top.parent    # `a::b::kernel<...>`: one qualified_identifier per component
        call = top.parent
        if call is not None and call.type == "call_expression" and any(c.type == "kernel_call_syntax" for c in call.children):
            continue
        if call is not None and call.type == "pointer_expression" and call.children[0].type == "&":
            top = call      # `&kernel<...>`: the stub call replaces the address-of too
        out.append((top.start_byte, top.end_byte, ident))
    return out


def _declared_name(node: Node, data: bytes) -> str | None:
    """The name a namespace-scope declaration introduces (`is_fp8` for `template <> struct
    is_fp8<fp8e4m3> ...`), or None."""
    inner = node
    while inner.type == "template_declaration":
        inner = next((c for c in inner.named_children if c.type not in ("template_parameter_list",)), inner)
        if inner is node:
            return None
    if inner.type in ("struct_specifier", "class_specifier", "enum_specifier"):
        name = inner.child_by_field_name("name")
    elif inner.type == "alias_declaration":    # `using fp4e2m1 = __nv_fp4_e2m1;`
        name = inner.child_by_field_name("name")
    elif inner.type == "type_definition":      # `typedef enum {...} Name;` (a C API header)
        name = inner.child_by_field_name("declarator")
    elif inner.type in ("function_definition", "declaration"):
        name = inner.child_by_field_name("declarator")
        while name is not None and name.type not in ("identifier", "field_identifier"):
            name = name.child_by_field_name("declarator") or name.child_by_field_name("name")
    else:
        return None
    if name is not None and name.type == "template_type":
        name = name.child_by_field_name("name")
    return data[name.start_byte:name.end_byte].decode() if name is not None else None


def declarations(data: bytes, names: set[str]) -> list[tuple[str, str]]:
    """(namespace, text) of every namespace-scope declaration of one of `names`, in file order,
    copied byte-for-byte (templates and their specializations alike), and of every `#define` of
    one of them. A declaration inside `#if` / `#ifdef` blocks (other than the include guard) keeps
    its condition: `#if COND\n<text>\n#endif`."""
    return [(d.namespace, d.text) for d in _declarations(data, names)]


def named_declarations(data: bytes, names: set[str]) -> list[tuple[str, str, str]]:
    """(namespace, name, text) of what `declarations` finds: each with the name it declares (a
    `#define`'s too)."""
    return [(d.namespace, d.name, d.text) for d in _declarations(data, names)]


def declared_names(data: bytes, names: set[str]) -> set[tuple[str, str]]:
    """(namespace, name) of each namespace-scope declaration of one of `names` (as `declarations`
    finds them; macros left out)."""
    return {(d.namespace, d.name) for d in _declarations(data, names) if not d.macro}


@dataclass(frozen=True)
class Declaration:
    """A namespace-scope declaration (or `#define`) of a header, as `declarations` finds it."""
    namespace: str
    name: str
    text: str                   # with the `#if` lines around it in the header
    macro: bool
    start: int                  # its own bytes (a struct's `;` included)
    end: int
    conditionals: tuple         # the (start, end) of the `#if` blocks around it, innermost last


def declaration_spans(data: bytes, names: set[str]) -> list[Declaration]:
    """`declarations` with where each lies in the header."""
    return _declarations(data, names)


def _declarations(data: bytes, names: set[str]) -> list[Declaration]:
    """`declarations`, each with its span."""
    out: list[Declaration] = []

    def visit(container: Node, ns: str, conds: list[str]) -> None:
        for child in container.children:
            if child.type == "namespace_definition":
                body = child.child_by_field_name("body")
                n = child.child_by_field_name("name")
                inner = data[n.start_byte:n.end_byte].decode() if n is not None else ""
                if body is not None:
                    visit(body, f"{ns}::{inner}" if ns else inner, conds)
                continue
            if child.type == "preproc_ifdef" and child.child_by_field_name("name") is not None \
                    and data[child.start_byte:child.start_byte + 7] == b"#ifndef" \
                    and container.type == "translation_unit":
                visit(child, ns, conds)      # the include guard
                continue
            if child.type == "ERROR":
                # NOTE: tree-sitter gives up on a C API header whose `extern "C" {` opens and closes
                # in two `#ifdef __cplusplus` blocks (TE's transformer_engine.h): its declarations
                # are children of one ERROR node, without their conditions
                visit(child, ns, conds)
                continue
            if child.type == "linkage_specification":       # extern "C" { ... }
                body = child.child_by_field_name("body")
                if body is not None:
                    visit(body, ns, conds)
                continue
            if child.type in ("preproc_if", "preproc_ifdef"):
                visit(child, ns, conds)
                continue
            if child.type in ("preproc_def", "preproc_function_def"):
                name = node_text(data, child.child_by_field_name("name"))
                if name in names:
                    text = data[child.start_byte:child.end_byte].decode().rstrip("\n")
                    conds, spans = _conditions_at(scanned, child.start_byte)
                    out.append(Declaration(ns, name, _conditioned(text, conds), True, child.start_byte,
                                           child.start_byte + len(text.encode()), spans))
                continue
            if child.type == "expression_statement" or child.type.startswith("preproc"):
                continue
            declared = _declared_name(child, data)
            if declared in names:
                end = child.end_byte
                nxt = child.next_sibling
                if nxt is not None and nxt.type == ";":   # `struct X {...};`: the `;` is a sibling
                    end = nxt.end_byte
                conds, spans = _conditions_at(scanned, child.start_byte)
                out.append(Declaration(ns, declared, _conditioned(data[child.start_byte:end].decode(), conds), False,
                                       child.start_byte, end, spans))

    scanned = _conditional_blocks(data)
    visit(parse(data), "", [])
    return out


_DIRECTIVE = re.compile(rb"(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b[^\n]*")


@lru_cache(maxsize=256)
def _conditional_blocks(data: bytes) -> tuple[tuple[int, int, tuple[tuple[int, str], ...]], ...]:
    """The preprocessor's `#if` blocks of a file as the preprocessor reads them (tree-sitter's
    tree does not follow a C API header's `#ifdef __cplusplus` / `extern "C" {` / `#endif`): each
    (start, end past its `#endif` line, [(offset, line) of its `#if` and each `#elif`/`#else`]),
    the include guard left out."""
    blocks, stack = [], []
    for m in _DIRECTIVE.finditer(data):
        kind, line = m.group(1), m.group(0).decode().strip()
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append((m.start(), [(m.start(), line)]))
        elif kind in (b"elif", b"else") and stack:
            stack[-1][1].append((m.start(), line))
        elif kind == b"endif" and stack:
            start, branches = stack.pop()
            nl = data.find(b"\n", m.end())
            blocks.append((start, len(data) if nl < 0 else nl + 1, tuple(branches)))
    first = _DIRECTIVE.search(data)
    if blocks and first is not None and first.group(1) == b"ifndef":
        guard = max(blocks, key=lambda b: b[1] - b[0])
        name = first.group(0).split()[-1]
        if guard[0] == first.start() and re.search(rb"#\s*define\s+" + re.escape(name) + rb"\b", data) \
                and not data[guard[1]:].strip(b" \t\n"):
            blocks.remove(guard)
    return tuple(blocks)


def _conditions_at(blocks, offset: int) -> tuple[list[str], tuple]:
    """(the `#if` lines a declaration at `offset` lies under, outermost first; with the
    `#elif`/`#else` lines before it when it is in a later branch), and the blocks' spans."""
    around = sorted((b for b in blocks if b[0] < offset < b[1]), key=lambda b: b[0])
    conds = ["\n".join(line for at, line in branches if at < offset) for _, _, branches in around]
    return conds, tuple((start, end) for start, end, _ in around)


def guard_end(data: bytes) -> int:
    """Where text added at the end of a header goes: the start of its include guard's `#endif`
    line (the guard: a top-level `#ifndef` holding the rest of the file), else the end of the file."""
    tops = [c for c in parse(data).children if c.type != "comment"]
    if len(tops) == 1 and tops[0].type == "preproc_ifdef" and data[tops[0].start_byte:tops[0].start_byte + 7] == b"#ifndef":
        end = next((c for c in reversed(tops[0].children) if c.type == "#endif"), None)
        if end is not None:
            return data.rfind(b"\n", 0, end.start_byte) + 1
    return len(data)


def include_conditions(data: bytes) -> dict[str, list[str]]:
    """Include name -> the `#if`/`#ifdef` lines around its first `#include` in a file (the include
    guard left out; [] when unconditional), as the preprocessor reads them (_conditional_blocks)."""
    blocks = _conditional_blocks(data)
    out: dict[str, list[str]] = {}
    for inc in includes(data):
        if not inc.nested:
            out.setdefault(inc.name, _conditions_at(blocks, inc.start)[0])
    return out


def _conditioned(text: str, conds: list[str]) -> str:
    for cond in reversed(conds):
        text = f"{cond}\n{text}\n#endif"
    return text


# the comment opening the block a header includes its stubs section with (generate._include_section)
STUBS_COMMENT = "// The NVRTC host stubs of the"
# a header's include of its section: the comment, the guard, the namespaces closed, the include, the
# namespaces reopened, and the guard's #endif, unless the block goes on with host code (texts.py
# merges a block with the guard of the host code right after it)
_STUB_BLOCK = re.compile(re.escape(STUBS_COMMENT.encode()) + rb"[^\n]*\n" + re.escape(RTC_IFNDEF.encode())
                         + rb"((?:\}[^\n]*\n)*#include[^\n]*\n(?:(?:inline )?namespace[^\n]*\{\n)*)(#endif[^\n]*\n)?")


def without_stub_blocks(data: bytes) -> bytes:
    """`data` with the blocks including stub sections (another rule's, one before) blanked, offsets
    kept: a block after a header's kernels closes and reopens its namespaces, which no parser of
    one branch of the preprocessor reads as C++ structure. A block going on with host code keeps
    its `#ifndef`, whose `#endif` follows that code."""
    def blank(m: re.Match) -> bytes:
        text = re.sub(rb"[^\n]", b" ", m.group(0))
        if m.group(2) is None:
            at, guard = m.start(1) - m.start(), RTC_IFNDEF.encode()
            text = text[:at - len(guard)] + guard + text[at:]
        return text
    return _STUB_BLOCK.sub(blank, data)


def namespaces_at(data: bytes, offset: int) -> list[tuple[str, str]]:
    """The namespace blocks open at `offset`, outermost first: (the text opening it, `namespace a {`
    as written, and its name, "" when anonymous)."""
    out: list[tuple[str, str]] = []
    node = parse(data)
    while True:
        inner = next((c for c in node.children if c.start_byte < offset < c.end_byte), None)
        if inner is None:
            return out
        if inner.type == "namespace_definition":
            body = inner.child_by_field_name("body")
            if body is None or not body.start_byte < offset < body.end_byte:
                return out
            name = inner.child_by_field_name("name")
            out.append((data[inner.start_byte:body.start_byte + 1].decode(),
                        node_text(data, name) if name is not None else ""))
            node = body
        else:
            node = inner


def stubs_point(data: bytes, kernel_ends: list[int], end: int) -> int:
    """Where a header includes the host stubs of the kernels it defines (ending at `kernel_ends`):
    `end` (its guard_end) when nothing but namespace closings and comments follow its last kernel;
    else the start of the line after the last kernel, or after the namespace closings right after it,
    before the code that launches them (a launch whose arguments do not depend on a template
    parameter needs the stubs there)."""
    last = max(kernel_ends)
    rest = _COMMENTS.sub(b"", data[last:end])
    if not rest.replace(b"}", b"").strip():
        return end
    nl = data.find(b"\n", last)
    at = len(data) if nl < 0 else nl + 1
    # past the namespaces closing right after the kernels: fewer to close and reopen around the include
    depth = len(namespaces_at(data, at))
    while (m := _NAMESPACE_CLOSING.match(data, at, end)) is not None and len(namespaces_at(data, m.end())) == depth - 1:
        at, depth = m.end(), depth - 1
    return at


# blank and comment lines, then a line holding only a closing brace (and a comment)
_NAMESPACE_CLOSING = re.compile(rb"(?:[ \t]*(?://[^\n]*)?\n)*[ \t]*\}[ \t]*(?://[^\n]*)?\n")
