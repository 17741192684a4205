"""Walk one libclang translation unit into plain, cacheable facts.

Facts per TU: kernels (`__global__` functions and templates), host functions defined under the
project root with their call sites, launch sites and other host uses of kernels, each at its
spelled position, with the per-expansion bindings (type aliases and constexpr values declared
around it) that a type-switch macro expansion gives every copy. Nothing here interprets them.

`TUIndexer` orchestrates: `declarations.py` (what declarations say, bindings), `walk.py` (the
statement walk: scopes, branches, macro switch arms, call edges), `sites.py` (what a site records)
and `locations.py` (spelled positions, macro invocations and their #defines).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import clang.cindex as ci

from .cursors import CK, child_cursors, device_only, qualname, real_path, setup_lib, template_params
from .declarations import Declarations
from .locations import Locator, SourceFiles
from .recognizers import END_OF_FUNCTION, MAIN_FILE
from .sites import SiteRecorder
from .walk import StatementWalk


class TUIndexer(Declarations, StatementWalk, SiteRecorder):
    """One TU's walk. Also the `ix` a recognizer gets (recognizers/__init__.py): the matcher
    vocabulary is `kernel_ref`, `kernel_refs`, `var_ref`, `resolve_kernel_expr`, `ref_text`,
    `site_base`, `record` (sites.py), `decl_key` (declarations.py), `children` (walk.py),
    `queue_function`, the positions below, `files`, and the current function's `var_kernels`,
    `lambdas`, `lambda_params`."""

    def __init__(self, tu: ci.TranslationUnit, root: str):
        setup_lib()
        self.tu = tu
        self.files = SourceFiles(root)
        self.loc = Locator(tu, self.files)
        self.kernels: dict[str, dict] = {}
        self.functions: dict[str, dict] = {}
        self.globals_uses: list[dict] = []
        self.typedefs: dict[str, str] = {}
        self.type_sizes: dict[str, int] = {}  # canonical type spelling -> sizeof, from clang
        self.classes: dict[str, dict] = {}  # qualified name -> traits.class_facts
        self.defs: dict[str, ci.Cursor] = {}  # usr -> function definition, walked when reached
        self.mains = {real_path(tu.spelling)}
        self._queue: list[str] = []
        self._kids: tuple | None = None
        self._cur_fn: dict | None = None  # the facts of the function being walked
        self.var_kernels: dict[str, list] = {}
        self.lambdas: dict[tuple, dict] = {}
        self.lambda_params: dict[tuple, dict] = {}
        self.tag_params: dict[tuple, dict] = {}   # a generic lambda's parameters passed a tag (recognizers/tags.py)

    # -- positions (locations.Locator) ---------------------------------------------------------
    def pos(self, cursor):
        """(file, line, col, offset, made by a macro body): `Locator.pos`."""
        return self.loc.pos(cursor)

    def macro_at(self, cursor):
        """The macro invocation whose name starts the cursor's extent, or None."""
        return self.loc.macro_at(cursor)

    def declared_in_project(self, cursor) -> bool:
        return self.loc.declared_in_project(cursor)

    # -- the walk ------------------------------------------------------------------------------
    def run(self) -> dict:
        self._top_level()
        for hook in MAIN_FILE:
            hook(self)
        # Walk only what the TU's own functions reach: the roots are the functions defined in
        # the main file(s); callees are queued as calls are found.
        for usr, cur in self.defs.items():
            f = cur.location.file
            if f is not None and self._is_main(f.name):
                self._queue.append(usr)
        while self._queue:
            usr = self._queue.pop()
            if usr not in self.functions and usr in self.defs:
                self._function(self.defs[usr])
        return {
            "kernels": self.kernels,
            "functions": self.functions,
            "global_uses": self.globals_uses,
            "typedefs": self.typedefs,
            "type_sizes": self.type_sizes,
            "classes": self.classes,
        }

    def _is_main(self, name: str) -> bool:
        return real_path(name) in self.mains

    def _function(self, cur):
        """A reachable function's facts, then the walk of its body and the END_OF_FUNCTION hooks."""
        usr = cur.get_usr()
        if usr in self.functions:
            return
        f, line, col, off, _ = self.loc.pos(cur)
        fn = {
            "usr": usr,
            "name": cur.spelling,
            "qualname": qualname(cur),
            "file": self.files.rel(f),
            "line": line,
            "is_template": cur.kind == CK.FUNCTION_TEMPLATE,
            "tparams": template_params(cur) if cur.kind == CK.FUNCTION_TEMPLATE else [],
            "params": [{"name": p.spelling, "type": p.type.spelling} for p in child_cursors(cur) if p.kind == CK.PARM_DECL],
            "static": cur.storage_class == ci.StorageClass.STATIC,
            "sites": {},
        }
        parent = cur.semantic_parent
        if parent is not None and parent.kind in (CK.CLASS_TEMPLATE, CK.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
            fn["templated"] = True  # a member of a class template: instantiated, never an entry point
        self.functions[usr] = fn
        self._cur_fn = fn
        self.var_kernels: dict[str, list] = {}
        self.lambdas: dict[tuple, dict] = {}
        self.lambda_params: dict[tuple, dict] = {}
        body = [ch for ch in child_cursors(cur) if ch.kind == CK.COMPOUND_STMT]
        for b in body:
            self._walk(b, [], [])
        for hook in END_OF_FUNCTION:
            hook(fn)

    def queue_function(self, d) -> str:
        """Walk a project function's definition when the walk gets to it (an edge the call graph
        does not show: a registry entry, a constructor); returns its USR."""
        u = d.get_usr()
        if u not in self.defs and d.is_definition() and not device_only(d):
            self.defs[u] = d
        self._queue.append(u)
        return u


def group_diagnostics(tu, files: SourceFiles) -> list[dict]:
    """Errors grouped by (message, spelled location), with counts."""
    counter: Counter = Counter()
    from .toolchain import DEPTH_DIAGNOSTIC

    for d in tu.diagnostics:
        if d.severity < ci.Diagnostic.Error or DEPTH_DIAGNOSTIC in d.spelling:
            continue
        loc = d.location
        fname = loc.file.name if loc.file else None
        key = (d.spelling, fname, loc.line, loc.column, d.severity)
        counter[key] += 1
    out = []
    for (msg, fname, line, col, sev), n in sorted(counter.items(), key=lambda kv: (str(kv[0][1]), kv[0][2], kv[0][0])):
        out.append({"severity": "fatal" if sev >= ci.Diagnostic.Fatal else "error", "message": msg,
                    "file": (files.rel(fname) if files.in_project(fname) else fname), "line": line,
                    "col": col, "count": n})
    return out


def parse_tu(path: Path, root: Path, flags: list[str]) -> tuple[ci.TranslationUnit, dict]:
    """Parse one TU (or an umbrella file including several): the libclang TU and the facts that
    need no walk (diagnostics, project and external includes)."""
    setup_lib()
    tu = ci.Index.create().parse(str(path), args=flags, options=ci.TranslationUnit.PARSE_DETAILED_PROCESSING_RECORD)
    files = SourceFiles(str(root))
    includes = sorted({real_path(inc.include.name) for inc in tu.get_includes() if inc.include is not None})
    return tu, {"diagnostics": group_diagnostics(tu, files),
                "includes": [files.rel(i) for i in includes if files.in_project(i)],
                "external_includes": [i for i in includes if not files.in_project(i)]}


def index_tu(tu: ci.TranslationUnit, root: Path, mains: list[Path] | None = None) -> dict:
    """Walk a parsed TU into its facts (kernels, functions, global uses, typedefs; JSON-serializable).

    `mains`: the files whose functions are the roots of the walk (default: the TU itself).
    """
    indexer = TUIndexer(tu, str(root))
    if mains:
        indexer.mains = {real_path(str(m)) for m in mains}
    return indexer.run()
