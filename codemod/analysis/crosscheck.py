"""Cross-check of the tree-sitter scan against clang, file by file: spelled launch sites and
`__global__` templates. Each disagreement becomes one CM02xx warning that names its probable cause.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..frontend.treesitter import FileScan, LaunchSite

SITE_MISMATCH = "CM0201"      # a launch site only one frontend sees
KERNEL_MISMATCH = "CM0202"    # a __global__ template only one frontend sees
CALLEE_MISMATCH = "CM0203"    # one launch, two different callees
DECLARATOR_WINDOW = 10        # lines between a stray `__global__` and clang's kernel name


def short_name(name: str | None) -> str:
    """`ns::kern` -> `kern`; template arguments are not expected here."""
    return (name or "").rsplit("::", 1)[-1].strip()


def from_analysis_json(doc: dict) -> dict:
    """Clang-side inputs from `codemod analyze --json`: keyword arguments for `crosscheck`.

    The JSON's kernel table lists launched kernels only, hence `launched_only`.
    """
    sites = [{"file": s["file"], "line": s["line"], "col": s["col"], "kind": s["kind"],
              "kernel": s.get("kernel"), "in_macro_body": s.get("in_macro_body", False)}
             for s in doc.get("sites", [])]
    kernels = [{"name": k.get("id") or k["name"], "file": k["file"], "line": k["line"],
                "is_template": k["is_template"]} for k in doc.get("kernels", [])]
    return {"clang_sites": sites, "clang_kernels": kernels, "launched_only": True}


def _diag(code: str, file: str, line: int, col: int | None, message: str) -> dict:
    return {"id": code, "severity": "warning", "file": file, "line": line, "col": col,
            "message": message, "count": 1}


def _ts_sites(scan: FileScan) -> dict[tuple[int, int], object]:
    """Launches spelled in the file itself (not in #define bodies), keyed by callee position."""
    sites = {(s.line, s.col): s for s in scan.launches if s.macro is None}
    sites.update({(c.line, c.col): c for c in scan.api_calls if c.is_launch and c.macro is None})
    return sites


def _callee(site) -> str:
    return site.callee if isinstance(site, LaunchSite) else site.api


def _broken_callee(ts, clang: dict) -> bool:
    return (isinstance(ts, LaunchSite) and ts.recovered and bool(clang.get("kernel"))
            and short_name(ts.callee) != short_name(clang["kernel"]))


def _callee_message(ts, clang: dict) -> str:
    return (f"tree-sitter reads the callee of this launch as '{_callee(ts)}' at {ts.line}:{ts.col}, "
            f"clang as {clang.get('kernel')}: error recovery in a statement-list macro argument "
            "split the template-id (the byte ranges of this site are not usable for a rewrite)")


def _macro_message(clang: dict, macro_sites: list) -> str:
    kernel = clang.get("kernel") or "the kernel"
    spelled = [s for s in macro_sites if short_name(s.callee) == short_name(kernel)]
    where = (f"the body of macro {spelled[0].macro} ({spelled[0].file}:{spelled[0].line})" if spelled
             else "a macro body")
    return (f"launch of {kernel} is spelled in {where}; clang reports the invocation position, "
            "tree-sitter the spelling")


def _clang_only_message(clang: dict, scan: FileScan) -> str:
    cause = (f"tree-sitter recovered from {scan.error_count} syntax errors in this file, the first "
             f"at {scan.errors[0][0]}:{scan.errors[0][1]}" if scan.error_count
             else "the launch may be produced by a macro expansion")
    kernel = clang.get("kernel") or "an unresolved kernel"
    return f"clang finds a launch of {kernel} here, tree-sitter does not: {cause}"


def _ts_only_message(ts) -> str:
    if not isinstance(ts, LaunchSite):
        return (f"tree-sitter finds a {ts.api} call that clang does not record: clang records a "
                "launch-API call only when an argument names a __global__ function, and here the "
                f"kernel argument is '{ts.kernel_arg}' (a runtime handle?)")
    return (f"tree-sitter finds a launch of '{ts.callee}' that clang does not: code in an inactive "
            "#if branch, or not reached by any analysed translation unit")


def _explained_macro_site(site, clang_sites: list[dict]) -> bool:
    return any(c.get("in_macro_body") and short_name(c.get("kernel")) == short_name(site.callee)
               for c in clang_sites)


def _check_sites(path: str, scan: FileScan, clang: list[dict], all_clang: list[dict],
                 macro_sites: list) -> list[dict]:
    ts = _ts_sites(scan)
    cl = {(c["line"], c["col"]): c for c in clang}
    out = []
    for pos in sorted(ts.keys() & cl.keys()):
        if _broken_callee(ts[pos], cl[pos]):
            out.append(_diag(CALLEE_MISMATCH, path, *pos, _callee_message(ts[pos], cl[pos])))
    ts_only = {p: ts[p] for p in ts.keys() - cl.keys()}
    for pos in sorted(cl.keys() - ts.keys()):
        c = cl[pos]
        partner = next((p for p in sorted(ts_only) if p[0] == pos[0] and ts_only[p].recovered), None)
        if partner is not None:
            out.append(_diag(CALLEE_MISMATCH, path, *pos, _callee_message(ts_only.pop(partner), c)))
        elif c.get("in_macro_body"):
            out.append(_diag(SITE_MISMATCH, path, *pos, _macro_message(c, macro_sites)))
        else:
            out.append(_diag(SITE_MISMATCH, path, *pos, _clang_only_message(c, scan)))
    for pos, site in sorted(ts_only.items()):
        out.append(_diag(SITE_MISMATCH, path, *pos, _ts_only_message(site)))
    for site in scan.launches:
        if site.macro is not None and not _explained_macro_site(site, all_clang):
            out.append(_diag(SITE_MISMATCH, path, site.line, site.col,
                             f"tree-sitter finds a launch of '{site.callee}' in the body of macro "
                             f"{site.macro}; clang reports no expansion of it (an unused macro?)"))
    return out


def _declarator_cause(scan: FileScan, line: int) -> str:
    stray = [g for g in scan.unattached_globals if 0 <= line - g[0] <= DECLARATOR_WINDOW]
    if stray:
        return (f"an #if ... #endif inside its declarator hides it from tree-sitter (the __global__ "
                f"at {stray[-1][0]}:{stray[-1][1]} is not attached to a declaration)")
    if scan.error_count:
        return f"tree-sitter recovered from {scan.error_count} syntax errors in this file"
    return "the declaration may be produced by a macro expansion"


def _check_kernels(path: str, scan: FileScan, clang: list[dict], clang_names: set[str],
                   launched: set[str] | None) -> list[dict]:
    ts_names = {short_name(k.name) for k in scan.kernels if k.is_template}
    out = []
    for k in sorted(clang, key=lambda k: k["line"]):
        if short_name(k["name"]) not in ts_names:
            out.append(_diag(KERNEL_MISMATCH, path, k["line"], None,
                             f"clang finds __global__ template {k['name']} here, tree-sitter does not: "
                             + _declarator_cause(scan, k["line"])))
    for k in scan.kernels:
        name = short_name(k.name)
        if not k.is_template or name in clang_names or (launched is not None and name not in launched):
            continue
        out.append(_diag(KERNEL_MISMATCH, path, k.line, k.col,
                         f"tree-sitter finds __global__ template {k.name} that clang does not: code in "
                         "an inactive #if branch, or not reached by any analysed translation unit"))
    return out


def crosscheck(scans: dict[str, FileScan], clang_sites: list[dict], clang_kernels: list[dict],
               files: Iterable[str] | None = None, launched_only: bool = False) -> list[dict]:
    """Disagreements between tree-sitter and clang in `files` (default: every scanned file).

    clang_sites: {"file", "line", "col", "kind", "kernel"[, "in_macro_body"]}, kind "launch" for
    launches; clang_kernels: {"name", "file", "line", "is_template"}. With `launched_only`, clang's
    kernel list holds launched kernels only, so tree-sitter templates nobody launches are skipped.
    """
    scope = sorted(scans if files is None else set(files) & scans.keys())
    launches = [s for s in clang_sites if s.get("kind") == "launch"]
    templates = [k for k in clang_kernels if k.get("is_template")]
    clang_names = {short_name(k["name"]) for k in templates}
    launched = {short_name(s.get("kernel")) for s in launches} if launched_only else None
    macro_sites = [s for scan in scans.values() for s in scan.launches if s.macro is not None]
    out = []
    for path in scope:
        scan = scans[path]
        out += _check_sites(path, scan, [s for s in launches if s["file"] == path], launches, macro_sites)
        out += _check_kernels(path, scan, [k for k in templates if k["file"] == path], clang_names, launched)
    return sorted(out, key=lambda d: (d["file"], d["line"], d["col"] or 0, d["id"]))
