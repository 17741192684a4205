"""Build integration for a library built by setuptools / `torch.utils.cpp_extension` (rule key
`migrate.setuptools`): a script writing the kernel strings as C++ headers (`<output_dir>/
string_headers.py`, rewriting a header only when its source changed), run by the setup script
before the extension is built, and the extension call's arguments gaining the stubs' and the
layer's sources, the headers' folder, the legacy option as a define (its environment variable) and
NVRTC. The setup script is read with Python's `ast`: each edit is anchored on a node's position;
an argument that is not a list literal is refused, naming it."""

from __future__ import annotations

import ast
import os
import posixpath
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...errors import ApplyError

SCRIPT = "string_headers.py"


@dataclass
class SetupEdit:
    path: str           # library-relative
    start: int
    end: int
    text: str
    why: str


def _offsets(data: bytes) -> list[int]:
    starts = [0]
    for i, b in enumerate(data):
        if b == 0x0A:
            starts.append(i + 1)
    return starts


def _is_extension_call(node: ast.AST, name: str) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    callee = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    if not callee.endswith("Extension"):
        return False
    for kw in node.keywords:
        if kw.arg == "name" and isinstance(kw.value, ast.Constant) and kw.value.value == name:
            return True
    return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == name


def _statement_of(tree: ast.Module, call: ast.Call) -> ast.stmt:
    """The innermost statement holding `call` (ast.walk is breadth first: a later one is deeper)."""
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and _contains(node, call):
            best = node
    return best


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return any(n is inner for n in ast.walk(outer))


def _imported(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(a.asname or a.name for a in node.names)
    return names


def edits(root: Path, setup: dict, repo_path: Callable[[str], str], rule_id: str, output_dir: str,
          sources: list[str], strings: list[str], library: str, render: Callable[..., str]
          ) -> tuple[dict[str, str], list[SetupEdit]]:
    """(new files, setup-script edits). `sources`: library-relative sources the extension gains
    (the stubs' kernels.cpp, a created layer's source); `strings`: the files embedded as strings."""
    path = repo_path(setup["file"])
    where = f"migrate/setuptools/file ({path})"
    try:
        data = (root / path).read_bytes()
    except OSError as exc:
        raise ApplyError(f"cannot read the setup script {path} ({exc.strerror})", where=where) from None
    try:
        tree = ast.parse(data, filename=path)
    except SyntaxError as exc:
        raise ApplyError(f"the setup script does not parse as Python: {exc.msg}", where=f"{path}:{exc.lineno}") \
            from None
    calls = [n for n in ast.walk(tree) if _is_extension_call(n, setup["extension"])]
    if len(calls) != 1:
        raise ApplyError(f"{path} has {len(calls)} extension calls named {setup['extension']!r} (the anchor needs "
                         "exactly one `CUDAExtension(name=..., ...)`)", where=where,
                         hint="check migrate/setuptools/extension")
    call = calls[0]
    lines = _offsets(data)
    at = lambda line, col: lines[line - 1] + col  # noqa: E731  (ast: 1-based lines, byte columns)
    setup_dir = posixpath.dirname(path)
    lib = os.path.relpath(root.resolve(), (root / setup_dir).resolve()).replace(os.sep, "/")
    rel = lambda p: posixpath.normpath(posixpath.join(lib, p))  # noqa: E731  library path -> setup-relative
    legacy = setup["legacy_option"]
    out: list[SetupEdit] = []
    why = "kernel strings, the stubs and the legacy option in the extension's build"

    # imports the added lines use
    missing = [m for m in ("os", "subprocess", "sys") if m not in _imported(tree)]
    if missing:
        # after the last `import x` (isort's first block), else after the last from-import
        imports = [n for n in tree.body if isinstance(n, ast.Import)] or \
            [n for n in tree.body if isinstance(n, ast.ImportFrom)]
        pos = at(imports[-1].end_lineno + 1, 0) if imports else 0
        if imports and imports[-1].end_lineno >= len(lines):
            pos = len(data)
        out.append(SetupEdit(path, pos, pos, "".join(f"import {m}\n" for m in missing), why))

    stmt = _statement_of(tree, call)
    indent = data[at(stmt.lineno, 0):at(stmt.lineno, stmt.col_offset)].decode()
    variable = f"{rule_id}_legacy_static"
    block = render("setuptools/setup_step.py.j2", indent=indent, rule=rule_id, legacy_option=legacy,
                   script=rel(posixpath.join(output_dir, SCRIPT)), variable=variable)
    start = at(stmt.lineno, 0)
    out.append(SetupEdit(path, start, start, block, why))

    def kwarg(name: str, items: list[str]) -> None:
        kw = next((k for k in call.keywords if k.arg == name), None)
        if kw is None:
            last = call.keywords[-1].value if call.keywords else call.args[-1]
            pos = at(last.end_lineno, last.end_col_offset)
            first = call.keywords[0] if call.keywords else call.args[0]
            multiline = call.lineno != (call.keywords[0].value.lineno if call.keywords else call.args[0].lineno)
            sep = ",\n" + " " * first.col_offset if multiline else ", "
            out.append(SetupEdit(path, pos, pos, f"{sep}{name}=[{', '.join(items)}]", why))
            return
        if not isinstance(kw.value, ast.List):
            raise ApplyError(f"{path}:{kw.value.lineno}: the extension's {name}= is not a list literal: the "
                             f"migration appends {', '.join(items)} to it", where=where,
                             hint=f"write {name}=[...] in the extension call, or add them by hand")
        written = {ast.dump(e) for e in kw.value.elts}
        items = [i for i in items if ast.dump(ast.parse(i, mode="eval").body) not in written]
        if not items:
            return
        elts = kw.value.elts
        if not elts:
            pos = at(kw.value.lineno, kw.value.col_offset + 1)
            out.append(SetupEdit(path, pos, pos, ", ".join(items), why))
            return
        last = elts[-1]
        pos = at(last.end_lineno, last.end_col_offset)
        sep = ",\n" + " " * last.col_offset if kw.value.lineno != last.end_lineno or len(elts) > 1 and \
            elts[0].lineno != elts[-1].lineno else ", "
        out.append(SetupEdit(path, pos, pos, "".join(sep + i for i in items), why))

    kwarg("sources", [f'"{rel(s)}"' for s in sources])
    kwarg("include_dirs", [f"{rule_id}_kernel_strings"])
    kwarg("define_macros", [f'("{legacy}", {variable})'])
    kwarg("libraries", ['"nvrtc"'])
    script_path = posixpath.join(output_dir, SCRIPT)
    script = render("setuptools/string_headers.py.j2", library=library, setup_name=posixpath.basename(path),
                    depth=len(output_dir.split("/")), sources=strings)
    return {script_path: script}, out
