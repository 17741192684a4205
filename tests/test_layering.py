"""The import layering, enforced: the house order of packages (cli -> parity -> apply ->
analysis/verify -> frontend/impact -> model, no arrows back up) and, inside `codemod/apply/`, the
order of its stages (base -> plan -> emit -> check -> write -> the driver: command, review, golden).
Lazy imports inside functions count the same as those at the top of a module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CODEMOD = Path(__file__).resolve().parents[1] / "codemod"

# lower index = lower layer; a module may import its own layer or lower ones
PACKAGES = [["model"], ["frontend", "impact"], ["analysis", "verify"], ["apply"], ["parity"], ["cli"]]
# imports that go up today, each with its reason (an entry here is a debt, not a permission)
PACKAGE_EXCEPTIONS = {
    ("parity.__main__", "cli"): "the parity command's global flags (-q, -v, --debug) come from cli",
}

STAGES = ["base", "plan", "emit", "check", "write", ""]      # "": the driver (command, review, golden)
STAGE_EXCEPTIONS: dict[tuple[str, str], str] = {}
# what a module outside the plan stage may take from plan/plan.py: the frozen stage objects; only
# the driver enters the stage (build_plan)
PLAN_OBJECTS = {"Plan", "KernelPlan", "Variant", "Skipped"}
PLAN_ENTRY = {"build_plan"}


def _modules(folder: Path, package: str):
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        yield ".".join([package, *parts]), path, is_package


def _imports(name: str, path: Path, is_package: bool) -> set[str]:
    """Absolute dotted names of every codemod module or package `path` imports (lazy ones too)."""
    here = name.split(".") if is_package else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("codemod.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                module = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("codemod"):
                module = node.module.split(".")
            else:
                continue
            if node.module:
                out.add(".".join(module))
            out |= {".".join([*module, a.name]) for a in node.names}
    return out


def _rank(layers: list[list[str]], part: str) -> int | None:
    return next((i for i, names in enumerate(layers) if part in names), None)


def _package_edges():
    for name, path, is_package in _modules(CODEMOD, "codemod"):
        for target in _imports(name, path, is_package):
            src, dst = name.split(".")[1:], target.split(".")[1:]
            if src and dst and src[0] != dst[0]:
                yield ".".join(src), dst[0]


def _stage_of(dotted: list[str]) -> str | None:
    """The stage of a module under codemod.apply (dotted: the parts after `apply`), or None."""
    if not dotted:
        return ""
    return dotted[0] if dotted[0] in STAGES else ""


def _stage_edges():
    for name, path, is_package in _modules(CODEMOD / "apply", "codemod.apply"):
        src = name.split(".")[2:]
        for target in _imports(name, path, is_package):
            parts = target.split(".")
            if parts[:2] != ["codemod", "apply"]:
                continue
            dst = parts[2:]
            if len(dst) == 1 and dst[0] not in STAGES and not (CODEMOD / "apply" / f"{dst[0]}.py").exists():
                continue        # a name imported from the package itself, not a module
            yield ".".join(src), _stage_of(src), ".".join(dst[:2]), _stage_of(dst)


def test_packages_import_only_their_own_layer_or_lower():
    upward = []
    for src, dst in _package_edges():
        a, b = _rank(PACKAGES, src.split(".")[0]), _rank(PACKAGES, dst)
        if a is not None and b is not None and b > a and (src, dst) not in PACKAGE_EXCEPTIONS:
            upward.append(f"codemod.{src} imports codemod.{dst}")
    assert not upward, "imports against the layering:\n" + "\n".join(sorted(set(upward)))


def test_apply_stages_import_only_earlier_stages():
    upward = []
    for src, src_stage, dst, dst_stage in _stage_edges():
        if STAGES.index(dst_stage) > STAGES.index(src_stage) and (src, dst) not in STAGE_EXCEPTIONS:
            upward.append(f"apply.{src} ({src_stage or 'driver'}) imports apply.{dst} ({dst_stage or 'driver'})")
    assert not upward, "apply stages import a later stage:\n" + "\n".join(sorted(set(upward)))


def test_the_plan_stage_is_entered_once_through_build_plan():
    """Later stages read the plan's frozen objects; none calls back into plan.py (issue 29: a walk of
    one rule used to enter it from generate, sections, prelude_copies, device_pass and command)."""
    found = []
    for name, path, _ in _modules(CODEMOD / "apply", "codemod.apply"):
        if name.startswith("codemod.apply.plan."):
            continue
        driver = name.split(".")[2:3] in (["command"], ["review"], ["golden"])
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = node.module or ""
            names = {a.name for a in node.names}
            if module.endswith("plan.plan"):
                extra = names - PLAN_OBJECTS - (PLAN_ENTRY if driver else set())
                if extra:
                    found.append(f"{name} imports {sorted(extra)} from plan.plan")
            elif module.endswith("plan") and "plan" in names:
                found.append(f"{name} imports the module plan.plan")
    assert not found, "\n".join(found)


def test_every_apply_module_is_in_a_stage():
    loose = [name for name, _, is_package in _modules(CODEMOD / "apply", "codemod.apply")
             if not is_package and len(name.split(".")) == 3
             and name.split(".")[2] not in ("command", "review", "golden")]
    assert not loose, f"modules outside the stages' packages: {loose} (put each in base, plan, emit, check or write)"


@pytest.mark.parametrize("table, edges", [(STAGE_EXCEPTIONS, "_stage_edges"), (PACKAGE_EXCEPTIONS, "_package_edges")])
def test_no_stale_exceptions(table, edges):
    """An exception that no import needs any more goes from the table."""
    seen = {(e[0], e[2]) if len(e) == 4 else e for e in globals()[edges]()}
    stale = [k for k in table if k not in seen]
    assert not stale, f"exceptions no import needs: {stale}"


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    """Golden case for _imports: a lazy `from ..plan import plan` inside a function of emit.x."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from ..plan import plan\n    from ...errors import ApplyError\n")
    assert _imports("codemod.apply.emit.x", f, False) >= {"codemod.apply.plan.plan", "codemod.errors"}
