"""`codemod apply`: CLI wiring. Dry run (diff) by default, --write all-or-nothing, --check for CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("apply", help="generate the NVRTC migration patch for a rule's kernels",
                       description="Generate the NVRTC migration for --target's kernels: a unified diff "
                                   "on stdout by default.")
    p.add_argument("directory", nargs="?", default=".", help="library root (default: .)")
    p.add_argument("--target", required=True, help="rule name (rules/NAME.yaml) or rule file path")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--diff", type=Path, metavar="FILE", help="write the diff to FILE (report beside it)")
    mode.add_argument("--write", action="store_true", help="apply the changes to the tree (all or nothing)")
    mode.add_argument("--check", action="store_true", help="exit 1 when changes are pending")
    p.add_argument("--only", nargs="+", default=None, metavar="K", help="migrate only these kernels")
    p.add_argument("--exclude", nargs="+", default=None, metavar="K", help="leave these kernels static")
    p.add_argument("--report", type=Path, metavar="FILE", help="where to write the migration report")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(run=run)


def compute(root: Path, target: str, only=None, exclude=None, version: str | None = None, progress=None):
    """(files, report text, plan) for a tree; files is empty when it is already migrated."""
    import json

    from .. import __version__
    from ..analysis.analyze import analyze
    from ..rule import load_rule
    from .generate import generate
    from .patch import apply_edits
    from .plan import build_plan
    from .report import render_report
    from .spec import migrate_spec

    rule = load_rule(target)
    spec = migrate_spec(rule)
    manifest = root / spec.output_dir / "codemod_manifest.json"
    if manifest.is_file() and json.loads(manifest.read_text()).get("rule") == spec.rule_id:
        return {}, f"already migrated: {manifest.relative_to(root)} exists\n", None
    analysis = analyze(root, [rule], progress=progress)
    plan = build_plan(root, analysis, spec, only=only, exclude=exclude)
    if not plan.kernels:
        from .generate import ChangeSet
        return {}, render_report(plan, ChangeSet(), {}), plan
    cs = generate(root, plan, version or __version__)
    files = apply_edits(root, cs)
    return files, render_report(plan, cs, files), plan


def run(args) -> int:
    from .patch import unified_diff, write_all

    root = Path(args.directory)
    if not root.is_dir():
        raise UsageError(f"no such directory: {root}")
    progress = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    files, report, _ = compute(root, args.target, args.only, args.exclude, progress=progress)
    diff = unified_diff(files)
    report_path = args.report or (args.diff.with_suffix(args.diff.suffix + ".report.md") if args.diff else None)
    if report_path:
        report_path.write_text(report)
    new = sum(1 for old, _ in files.values() if old is None)
    summary = f"{len(files)} files changed ({new} new)" + (f"; report: {report_path}" if report_path else "")
    if args.check:
        print(summary if files else "nothing to do", file=sys.stderr)
        return 1 if files else 0
    if args.write:
        write_all(root, files)
        print(f"{summary}; written. Next: build, then `codemod verify`.", file=sys.stderr)
        return 0
    if args.diff:
        args.diff.write_text(diff)
        print(f"{summary}; diff: {args.diff}. Next: git apply {args.diff}", file=sys.stderr)
    else:
        sys.stdout.write(diff)
        print(summary, file=sys.stderr)
    return 0
