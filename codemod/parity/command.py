"""`codemod parity generate|run`: CLI wiring (docs/parity.md)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from .. import strict_json
from ..errors import ParseError, UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("parity", help="compare original and migrated library outputs on a GPU",
                       description="Generate a driver from the analysis and rule, or build both trees "
                                   "and compare their outputs byte for byte.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    g = verbs.add_parser("generate", help="write the driver source and its plan (no GPU needed)")
    g.add_argument("directory", type=Path, help="library root (the original tree)")
    g.add_argument("--target", required=True, action="append",
                   help="rule name (rules/NAME.yaml) or rule file path; repeat it for one driver over "
                        "several rules' migrated kernels (the analysis must cover their TUs)")
    g.add_argument("--analysis", type=Path, required=True, help="`codemod analyze --json` of the tree")
    g.add_argument("--profile", required=True, help="parity profile name (codemod/parity/libraries) or path")
    g.add_argument("-o", "--output", type=Path, required=True, help="folder for driver.cu and plan.json")
    r = verbs.add_parser("run", help="build both trees, run the driver, compare, write JSON + markdown")
    add_run_arguments(r)
    b = verbs.add_parser("build", help="one clean, timed build of a tree, keeping its ninja log and nvcc timings")
    add_build_arguments(b)
    m = verbs.add_parser("report", help="render the markdown summary of a result JSON again")
    m.add_argument("result", type=Path, help="`parity run --json` output (codemod-parity/1)")
    m.add_argument("-o", "--output", type=Path, help="markdown file (default: stdout)")
    p.set_defaults(run=run)


def add_build_arguments(b) -> None:
    b.add_argument("--side", required=True, type=_side_name,
                   help="which tree; the build goes to WORK/build-SIDE, where `run --skip-build` finds "
                        "`original` and `migrated` (another name, e.g. `hand`, builds a third tree to time)")
    b.add_argument("--src", type=Path, required=True, help="library tree")
    b.add_argument("--build-cmd", required=True, help="the library's build command; {src} and {build} substituted")
    b.add_argument("--configure-cmd", default="", help="run first and timed apart (e.g. cmake -S {src} -B {build})")
    b.add_argument("--work", type=Path, required=True, help="scratch folder shared with `parity run`")
    b.add_argument("--no-nvcc-time", action="store_true", help="do not add nvcc --time through NVCC_APPEND_FLAGS")
    b.add_argument("--commit", default="", help="codemod commit to record")
    b.set_defaults(verb="build", run=run)


def _side_name(text: str) -> str:
    # NOTE: the name becomes part of file names in WORK (build-SIDE, SIDE.ninja_log).
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", text):
        raise argparse.ArgumentTypeError(f"side {text!r}: letters, digits, '_' and '-' only "
                                         "(original, migrated, or a name for another tree)")
    return text


def add_run_arguments(r) -> None:
    r.add_argument("--original", type=Path, required=True, help="original library tree")
    r.add_argument("--migrated", type=Path, required=True, help="migrated library tree")
    r.add_argument("--build-cmd", required=True,
                   help="the library's build command; {src} and {build} are substituted")
    r.add_argument("--driver", type=Path, required=True, help="folder written by `parity generate`")
    r.add_argument("--work", type=Path, required=True, help="scratch folder (builds, drivers, dumps)")
    r.add_argument("--json", type=Path, required=True, help="result JSON (codemod-parity/1)")
    r.add_argument("--markdown", type=Path, help="short markdown summary")
    r.add_argument("--seed", type=int, default=None, help="input seed (default: from the clock, recorded)")
    r.add_argument("--shards", type=int, default=11, help="parallel driver processes per build")
    r.add_argument("--reps", type=int, default=20)
    r.add_argument("--nvcc", default="nvcc")
    r.add_argument("--arch", default="sm_90")
    r.add_argument("--skip-build", action="store_true", help="reuse the builds in --work")
    r.add_argument("--no-timings", action="store_true", help="compare outputs only (no first-use or warm times)")
    r.add_argument("--clear-pending-errors", action="store_true",
                   help="drop a launch error left pending by a rejected case before the next case")
    r.add_argument("--commit", default="", help="codemod commit to record")
    r.add_argument("--label", default="")
    r.set_defaults(verb="run", run=run)


def _generate(args) -> int:
    from ..rule import load_rule
    from .driver import render_driver
    from .plan import build_plan, load_profile

    if not args.analysis.is_file():
        raise UsageError(f"no analysis file {args.analysis}", hint="run `codemod analyze DIR --json FILE` first")
    analysis = read_analysis(args.analysis)
    plan = build_plan(analysis, merged_rules([load_rule(t).raw for t in args.target]), load_profile(args.profile),
                      args.directory)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "driver.cu").write_text(render_driver(plan))
    (args.output / "plan.json").write_text(plan.to_json())
    grouped = f" (+{len(plan.grouped_entries)} grouped)" if plan.grouped_entries else ""
    functions = len({e.name for e in plan.entries})
    calls = f" ({len(plan.entries)} calls with their variants)" if functions != len(plan.entries) else ""
    print(f"parity: driver for {functions} entry points{calls}{grouped}, {sum(plan.case_counts().values())} "
          f"cases per build, written to {args.output}. "
          f"Next: `codemod parity run --driver {args.output} ...` on a GPU machine.", file=sys.stderr)
    return 0


def merged_rules(rules: list[dict]) -> dict:
    """Several rules as one for the plan: ids joined with '+', the union of migrate.kernels."""
    if len(rules) == 1:
        return rules[0]
    kernels = []
    for r in rules:
        kernels += [k for k in r.get("migrate", {}).get("kernels", []) if k not in kernels]
    return {"id": "+".join(str(r.get("id", "?")) for r in rules), "migrate": {"kernels": kernels}}


def _run(args) -> int:
    from .report import render_markdown
    from .runner import RunConfig, run as run_parity

    plan = _read_json(args.driver / "plan.json", "the driver plan",
                      hint="run `codemod parity generate ... -o DIR` and pass DIR as --driver")
    if not isinstance(plan, dict):
        raise ParseError("not a parity plan (expected a JSON object)", where=str(args.driver / "plan.json"))
    cfg = RunConfig(trees={"original": args.original.resolve(), "migrated": args.migrated.resolve()},
                    build_cmd=args.build_cmd, driver=(args.driver / "driver.cu").resolve(), plan=plan,
                    work=args.work.resolve(), out=args.json.resolve().parent,
                    seed=args.seed if args.seed is not None else int(time.time()), shards=args.shards,
                    reps=args.reps, nvcc=args.nvcc, arch=args.arch, skip_build=args.skip_build, timings=not args.no_timings,
                    clear_pending=args.clear_pending_errors, commit=args.commit, label=args.label,
                    log=None if args.quiet else sys.stderr)
    result = run_parity(cfg)
    args.json.write_text(strict_json.dumps(result, "parity result", indent=1, sort_keys=True) + "\n")
    if args.markdown:
        args.markdown.write_text(render_markdown(result))
    p = result["parity"]
    print(f"parity: {p['equal']} of {p['ran']} cases byte-equal, {result['mismatch_count']} mismatches; "
          f"{args.json}", file=sys.stderr)
    return 0 if p["all_equal"] else 1


def _build(args) -> int:
    from .build import BuildSpec, build

    r = build(BuildSpec(side=args.side, src=args.src, work=args.work.resolve(), build_cmd=args.build_cmd,
                        configure_cmd=args.configure_cmd, nvcc_time=not args.no_nvcc_time, commit=args.commit))
    print(f"parity: {args.side} built in {r['build']['wall_s']} s wall, {r['build']['cpu_s']} s CPU; "
          f"record {args.work / f'build-{args.side}.json'}", file=sys.stderr)
    return 0


def _read_json(path: Path, what: str, hint: str | None = None):
    """The JSON document at `path`; an unreadable or malformed one is a ParseError with its line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(f"cannot read {what}: {exc.strerror}", where=str(path), hint=hint) from None
    except UnicodeDecodeError:
        raise ParseError(f"cannot read {what}: not UTF-8", where=str(path), hint=hint) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{what} is not JSON: {exc.msg}", where=f"{path}:{exc.lineno}", hint=hint) from None
    except RecursionError:
        raise ParseError(f"{what} is nested too deeply", where=str(path), hint=hint) from None
    except ValueError as exc:  # a number past Python's int-string limit (4,300 digits)
        raise ParseError(f"{what} is not JSON: {str(exc)[:80]}", where=str(path), hint=hint) from None


def read_analysis(path: Path) -> dict:
    """An analysis document (`codemod analyze --json`, or a golden one without the timings),
    checked for what the plan reads: entry_points[] with name, file, line and kernels."""
    hint = "pass the file `codemod analyze DIR --json FILE` wrote"
    doc = _read_json(path, "analysis", hint)
    if not isinstance(doc, dict) or not str(doc.get("schema_version", "")).startswith("1."):
        raise ParseError("not a codemod analysis (no schema_version 1.x)", where=str(path), hint=hint)
    eps = doc.get("entry_points")
    shape = {"name": str, "file": str, "line": int, "kernels": dict}
    bad = "entry_points is not a list" if not isinstance(eps, list) else next(
        (f"entry_points[{i}]: expected {{name, file, line, kernels}}" for i, ep in enumerate(eps)
         if not isinstance(ep, dict) or not all(isinstance(ep.get(k), t) for k, t in shape.items())), None)
    if bad:
        raise ParseError(f"analysis does not have the documented shape: {bad}", where=str(path), hint=hint)
    return doc


def _report(args) -> int:
    from .report import render_markdown

    try:
        result = json.loads(args.result.read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise UsageError(f"cannot read parity result {args.result}: {exc}") from None
    if not isinstance(result, dict) or result.get("schema") != "codemod-parity/1":
        raise UsageError(f"{args.result} is not a parity result (schema codemod-parity/1)")
    text = render_markdown(result)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def run(args) -> int:
    if getattr(args, "verb", None) == "report":
        return _report(args)
    if getattr(args, "verb", None) == "generate":
        return _generate(args)
    if getattr(args, "verb", None) == "build":
        return _build(args)
    if getattr(args, "verb", None) == "run":
        return _run(args)
    raise UsageError("codemod parity needs a verb: generate, build, run or report")
