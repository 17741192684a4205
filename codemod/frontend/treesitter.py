"""Fast syntactic scan of CUDA sources with tree-sitter-cuda: launch sites, launch-API calls,
`__global__` declarations and parse-error positions, with exact byte ranges for later rewrites.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Query, QueryCursor

LAUNCH_APIS = ("cudaLaunchKernel", "cudaLaunchKernelEx", "cudaLaunchKernelExC",
               "cudaLaunchCooperativeKernel", "cuLaunchKernel")
USE_APIS = ("cudaFuncSetAttribute", "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
            "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags")
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".hh", ".cpp", ".cc", ".cxx", ".inl")
MAX_ERROR_POSITIONS = 5
# Which argument of each API names the kernel (a function, a template-id or a handle).
KERNEL_ARG = {"cudaLaunchKernel": 0, "cudaLaunchKernelEx": 1, "cudaLaunchKernelExC": 1,
              "cudaLaunchCooperativeKernel": 0, "cuLaunchKernel": 0, "cudaFuncSetAttribute": 0,
              "cudaOccupancyMaxActiveBlocksPerMultiprocessor": 1,
              "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags": 1}

_API_PATTERN = "^(::)?(" + "|".join(LAUNCH_APIS + USE_APIS) + ")$"
# One query, one tree walk: pattern index -> what it finds.
_PATTERNS = (
    ("launch", "(call_expression (kernel_call_syntax)) @call"),
    ("api", f'(call_expression function: (_) @fn (#match? @fn "{_API_PATTERN}")) @call'),
    ("global", '["__global__"] @tok'),
    ("macro", "[(preproc_def) (preproc_function_def)] @def"),
)
# NOTE: the wrapper gives a macro body a function-body context; a bare launch expression at file
# scope does not parse as one.
_BODY_PREFIX = b"void __codemod_macro_body__() {\n"
_BODY_SUFFIX = b"\n;}\n"
_BODY_HINT = re.compile(rb"<<<|" + "|".join(LAUNCH_APIS + USE_APIS).encode())

Range = tuple[int, int]


@dataclass
class LaunchSite:
    """A `callee<targs><<<config>>>(args)` expression; ranges are [start, end) byte offsets."""

    file: str
    line: int
    col: int
    start: int
    end: int
    callee: str
    template_args: list[str] | None
    config: list[str]
    args: list[str]
    callee_range: Range
    template_args_range: Range | None
    config_range: Range
    args_range: Range
    recovered: bool = False
    macro: str | None = None      # name of the #define whose body spells this launch


@dataclass
class ApiCall:
    """A call to a launch or kernel-attribute API of the CUDA runtime or driver."""

    file: str
    line: int
    col: int
    start: int
    end: int
    api: str
    args: list[str]
    callee_range: Range
    args_range: Range
    recovered: bool = False
    macro: str | None = None

    @property
    def is_launch(self) -> bool:
        return self.api in LAUNCH_APIS

    @property
    def kernel_arg(self) -> str | None:
        """The text of the argument that names the kernel, when the call has it."""
        index = KERNEL_ARG.get(self.api, 0)
        return self.args[index] if index < len(self.args) else None


@dataclass
class KernelDecl:
    """A `__global__` function definition or declaration; the range includes its template header."""

    file: str
    name: str
    line: int
    col: int
    is_template: bool
    template_params: str | None
    start: int
    end: int
    is_definition: bool
    recovered: bool = False
    # The body is one `#if` on `__CUDA_ARCH__ >= N` (an `#else` of at most one statement, e.g. a
    # trap, allowed): N, so a build for older archs compiles an empty kernel; else None.
    body_arch_min: int | None = None
    # The body is one `#if` that bounds __CUDA_ARCH__ from above (`>= 900 && < 1000`): [low or
    # None, N], so builds outside it compile an empty kernel (body_arch_min stays None there).
    body_arch_range: tuple[int | None, int] | None = None


@dataclass
class FileScan:
    """Everything the scanner found in one file; `errors` holds the first (line, col) pairs."""

    file: str
    launches: list[LaunchSite] = field(default_factory=list)
    api_calls: list[ApiCall] = field(default_factory=list)
    kernels: list[KernelDecl] = field(default_factory=list)
    error_count: int = 0
    errors: list[tuple[int, int]] = field(default_factory=list)
    unattached_globals: list[tuple[int, int]] = field(default_factory=list)


@lru_cache(maxsize=1)
def _language() -> Language:
    return Language(tree_sitter_cuda.language())


@lru_cache(maxsize=1)
def _query() -> Query:
    return Query(_language(), "\n".join(pattern for _, pattern in _PATTERNS))


def _matches(root: Node, kinds: tuple[str, ...]) -> dict[str, list[dict[str, list[Node]]]]:
    """Matches of the named patterns, grouped by pattern name, from one walk of the tree."""
    grouped: dict[str, list[dict[str, list[Node]]]] = {name: [] for name in kinds}
    for index, captures in QueryCursor(_query()).matches(root):
        name = _PATTERNS[index][0]
        if name in grouped:
            grouped[name].append(captures)
    return grouped


def _error_nodes(node: Node) -> list[Node]:
    """ERROR and MISSING nodes, in document order; only subtrees that hold an error are walked."""
    found = [node] if node.type == "ERROR" or node.is_missing else []
    for child in node.children:
        if child.has_error:
            found += _error_nodes(child)
    return found


class _Source:
    """Bytes of one file plus the mapping from byte offsets to 1-based line and column."""

    def __init__(self, path: str, data: bytes):
        self.path = path
        self.data = data
        self._line_starts: list[int] | None = None

    @property
    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in re.finditer(rb"\n", self.data)]
        return self._line_starts

    def position(self, offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(self.line_starts, offset) - 1
        return row + 1, offset - self.line_starts[row] + 1

    def text(self, start: int, end: int) -> str:
        return " ".join(self.data[start:end].decode("utf-8", "replace").split())


def _span(node: Node, shift: int) -> Range:
    return node.start_byte + shift, node.end_byte + shift


def _items(node: Node | None) -> list[Node]:
    if node is None:
        return []
    return [c for c in node.named_children if c.type != "comment"]


def _is_recovered(node: Node) -> bool:
    """True when the node's subtree holds an error, or it hangs below an ERROR/MISSING node."""
    if node.has_error:
        return True
    parent = node.parent
    while parent is not None:
        if parent.type == "ERROR" or parent.is_missing:
            return True
        parent = parent.parent
    return False


def _kernel_targs(callee: Node) -> Node | None:
    """The template argument list naming the launched specialization, if the callee spells one."""
    node = callee
    while node is not None and node.type == "qualified_identifier":
        node = node.child_by_field_name("name")
    if node is not None and node.type == "template_function":
        return node.child_by_field_name("arguments")
    return None


def _launch(src: _Source, call: Node, shift: int, macro: str | None) -> LaunchSite:
    callee = call.child_by_field_name("function")
    config = next(c for c in call.children if c.type == "kernel_call_syntax")
    args = call.child_by_field_name("arguments")
    targs = _kernel_targs(callee)
    cstart, cend = _span(callee, shift)
    name_end = targs.start_byte + shift if targs is not None else cend
    line, col = src.position(cstart)
    return LaunchSite(
        file=src.path, line=line, col=col, start=call.start_byte + shift, end=call.end_byte + shift,
        callee=src.text(cstart, name_end),
        template_args=None if targs is None else [src.text(*_span(a, shift)) for a in _items(targs)],
        config=[src.text(*_span(a, shift)) for a in _items(config)],
        args=[src.text(*_span(a, shift)) for a in _items(args)],
        callee_range=(cstart, cend),
        template_args_range=None if targs is None else _span(targs, shift),
        config_range=_span(config, shift),
        args_range=_span(args, shift) if args is not None else (cend, cend),
        recovered=_is_recovered(call), macro=macro)


def _api_call(src: _Source, call: Node, fn: Node, shift: int, macro: str | None) -> ApiCall:
    args = call.child_by_field_name("arguments")
    start, end = _span(fn, shift)
    line, col = src.position(start)
    return ApiCall(file=src.path, line=line, col=col, start=call.start_byte + shift,
                   end=call.end_byte + shift, api=src.text(start, end).lstrip(":"),
                   args=[src.text(*_span(a, shift)) for a in _items(args)],
                   callee_range=(start, end), args_range=_span(args, shift),
                   recovered=_is_recovered(call), macro=macro)


def _declarator_name(node: Node) -> Node | None:
    """The name node of a function declarator reached through the `declarator` fields."""
    decl = node.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    return decl.child_by_field_name("declarator") if decl is not None else None


_ARCH_TERM = re.compile(r"^(?:defined\(?__CUDA_ARCH__\)?|__CUDA_ARCH__(>=|>|<=|<)(\d+))$")


def _arch_bounds(text: str) -> tuple[int | None, int | None] | None:
    """`(defined __CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && __CUDA_ARCH__ < 1000` -> (900, 1000):
    the least __CUDA_ARCH__ the condition holds for and the least above it where it stops holding
    (None: unbounded); None for any other condition (`||`, `!`, other macros)."""
    flat = re.sub(r"\s+", "", text)
    if "||" in flat or "!" in flat:
        return None
    least = below = None
    for term in flat.split("&&"):
        while term.startswith("(") and term.endswith(")") and term.count("(") == term.count(")"):
            term = term[1:-1]
        m = _ARCH_TERM.match(term)
        if m is None:
            return None
        if m.group(2):
            op, n = m.group(1), int(m.group(2))
            if op.startswith(">"):
                n += 1 if op == ">" else 0
                least = n if least is None else max(least, n)
            else:
                n += 1 if op == "<=" else 0
                below = n if below is None else min(below, n)
    return least, below


def _body_guard(node: Node) -> str | None:
    """The condition of the one `#if` a kernel body is (an `#else` of at most one statement
    allowed), else None."""
    body = node.child_by_field_name("body")
    if body is None:
        return None
    inner = [c for c in body.named_children if c.type != "comment"]
    if len(inner) != 1 or inner[0].type != "preproc_if":
        return None
    guard = inner[0]
    cond = guard.child_by_field_name("condition")
    alt = guard.child_by_field_name("alternative")
    if cond is None or (alt is not None and (alt.type != "preproc_else" or
                                             len([c for c in alt.named_children if c.type != "comment"]) > 1)):
        return None
    return cond.text.decode(errors="replace")


def _body_arch(node: Node) -> tuple[int | None, tuple[int | None, int] | None]:
    """KernelDecl.body_arch_min and body_arch_range of a kernel definition, from one reading of
    its body's `#if`: a condition bounded from below only gives the minimum, one bounded from
    above too gives the range."""
    cond = _body_guard(node)
    bounds = _arch_bounds(cond) if cond is not None else None
    if bounds is None:
        return None, None
    return (bounds[0], None) if bounds[1] is None else (None, bounds)


def _kernel(src: _Source, node: Node) -> KernelDecl | None:
    name = _declarator_name(node)
    if name is None:
        return None
    outer = node
    while outer.parent is not None and outer.parent.type == "template_declaration":
        outer = outer.parent
    header = node.parent if node.parent is not None and node.parent.type == "template_declaration" else None
    params = header.child_by_field_name("parameters") if header is not None else None
    params_text = src.text(params.start_byte, params.end_byte) if params is not None else None
    line, col = src.position(name.start_byte)
    arch_min, arch_range = _body_arch(node) if node.type == "function_definition" else (None, None)
    return KernelDecl(file=src.path, name=src.text(name.start_byte, name.end_byte), line=line, col=col,
                      is_template=header is not None,
                      template_params=params_text,
                      start=outer.start_byte, end=outer.end_byte,
                      is_definition=node.type == "function_definition", recovered=_is_recovered(node),
                      body_arch_min=arch_min, body_arch_range=arch_range)


def _scan_kernels(src: _Source, tokens: list[Node], scan: FileScan) -> None:
    for tok in tokens:
        owner = tok.parent
        kernel = _kernel(src, owner) if owner.type in ("function_definition", "declaration") else None
        if kernel is None:
            scan.unattached_globals.append(src.position(tok.start_byte))
        else:
            scan.kernels.append(kernel)


def _scan_calls(src: _Source, found: dict, scan: FileScan, shift: int = 0, macro: str | None = None) -> None:
    for m in found.get("launch", []):
        scan.launches.append(_launch(src, m["call"][0], shift, macro))
    for m in found.get("api", []):
        scan.api_calls.append(_api_call(src, m["call"][0], m["fn"][0], shift, macro))


def _scan_errors(src: _Source, root: Node, scan: FileScan) -> None:
    if not root.has_error:
        return
    nodes = _error_nodes(root)
    scan.error_count = len(nodes)
    scan.errors = [src.position(n.start_byte) for n in nodes[:MAX_ERROR_POSITIONS]]


def _scan_macro_bodies(src: _Source, defs: list[Node], parser: Parser, scan: FileScan) -> None:
    """Launches spelled in #define bodies: each body is re-parsed inside a function body."""
    for node in defs:
        body = node.child_by_field_name("value")
        if body is None or not _BODY_HINT.search(src.data, body.start_byte, body.end_byte):
            continue
        text = src.data[body.start_byte:body.end_byte]
        tree = parser.parse(_BODY_PREFIX + text + _BODY_SUFFIX)
        name = node.child_by_field_name("name")
        shift = body.start_byte - len(_BODY_PREFIX)
        found = _matches(tree.root_node, ("launch", "api"))
        _scan_calls(src, found, scan, shift, src.text(name.start_byte, name.end_byte))


def _wanted(data: bytes) -> tuple[str, ...]:
    """The patterns worth running on this file; a byte search is far cheaper than a tree walk."""
    has_calls = _BODY_HINT.search(data) is not None
    kinds = ("launch", "api") if has_calls else ()
    if b"__global__" in data:
        kinds += ("global",)
    if has_calls and b"#define" in data:
        kinds += ("macro",)
    return kinds


def scan_bytes(path: str, data: bytes, parser: Parser | None = None) -> FileScan:
    """Scan one file's bytes; `path` is the relative path recorded in every result."""
    parser = parser or Parser(_language())
    src = _Source(path, data)
    root = parser.parse(data).root_node
    scan = FileScan(file=path)
    kinds = _wanted(data)
    found = _matches(root, kinds) if kinds else {}
    _scan_calls(src, found, scan)
    _scan_macro_bodies(src, [m["def"][0] for m in found.get("macro", [])], parser, scan)
    _scan_kernels(src, [m["tok"][0] for m in found.get("global", [])], scan)
    _scan_errors(src, root, scan)
    scan.launches.sort(key=lambda s: s.start)
    scan.api_calls.sort(key=lambda s: s.start)
    return scan


def source_files(root: Path) -> list[str]:
    """Relative paths of the C++/CUDA sources under root, sorted."""
    return sorted(str(p.relative_to(root)).replace(os.sep, "/")
                  for p in Path(root).rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def scan_tree(root: Path, files: list[str] | None = None) -> dict[str, FileScan]:
    """Scan `files` (relative to root; default: every source under root), serially."""
    root = Path(root)
    parser = Parser(_language())
    rels = source_files(root) if files is None else list(files)
    return {rel: scan_bytes(rel, (root / rel).read_bytes(), parser) for rel in rels}
