"""`codemod impact`: command-line front of the build impact model (report on stdout, files on request)."""

from __future__ import annotations

import sys

from ..errors import UsageError
from .. import strict_json
from .options import POLICIES, STEPS_LISTED


def add_parser(sub) -> None:
    p = sub.add_parser(
        "impact",
        help="price TUs from build logs and predict builds",
        description="Price every step of a recorded ninja build, replay ninja's scheduling and predict the "
                    "build after removing or scaling steps (what-if). With --against, compare two builds.",
    )
    p.add_argument("log", help=".ninja_log of the build (v5, v6 or v7)")
    p.add_argument("--nvcc-time", action="append", default=[], metavar="CSV",
                   help="nvcc --time CSV (one per TU or one shared file); repeatable")
    p.add_argument("--build-ninja", metavar="FILE", help="build.ninja for the dependency graph and edge order")
    p.add_argument("--build", type=int, default=-1, metavar="N",
                   help="which build of the log (0-based; default: the last)")
    p.add_argument("--remove", action="append", default=[], metavar="GLOB",
                   help="what-if: the matching steps disappear (moved to NVRTC); repeatable")
    p.add_argument("--scale", action="append", default=[], metavar="GLOB=FACTOR",
                   help="what-if: multiply the matching steps' durations; repeatable")
    p.add_argument("-j", "--jobs", type=int, metavar="N",
                   help="replay with -j N (default: the recorded build's peak concurrency; 0 = unlimited)")
    p.add_argument("--policy", choices=sorted(POLICIES), help="ninja scheduling policy (default: from the log version)")
    p.add_argument("--cores", type=int, metavar="N",
                   help="CPU contention model: processor sharing over N cores (default: off)")
    p.add_argument("--contention", type=float, default=0.0, metavar="ALPHA",
                   help="extra slowdown per co-running job under --cores (default 0)")
    p.add_argument("--against", metavar="LOG_B", help="compare LOG with LOG_B step by step")
    p.add_argument("--against-nvcc-time", action="append", default=[], metavar="CSV",
                   help="nvcc --time CSV of LOG_B; repeatable")
    p.add_argument("--json", metavar="FILE", help="write the JSON document ('-' for stdout)")
    p.add_argument("--html", metavar="FILE", help="write the self-contained HTML report")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome/Perfetto trace (JSON)")
    p.add_argument("--all-steps", action="store_true",
                   help=f"list every step in the JSON steps[] table (default: the {STEPS_LISTED} longest)")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows of the step table on stdout (default 20)")
    p.set_defaults(run=run)


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


MAX_CONTENTION = 100.0  # slowdown per co-running job; beyond it the model means nothing
COMPACT_ABOVE = 5000  # steps; bigger documents are written without indentation


def dumps(doc: dict) -> str:
    total = doc["steps_limited"]["total"] if "steps_limited" in doc else len(doc.get("steps", ()))
    indent = 1 if total <= COMPACT_ABOVE else None
    seps = None if indent else (",", ":")
    return strict_json.dumps(doc, "impact JSON", indent=indent, separators=seps, ensure_ascii=False) + "\n"


def run(args) -> int:
    from . import report_text
    from .predict import analyse, limit_steps, load, parse_scale

    if args.cores is not None and args.cores <= 0:
        raise UsageError(f"--cores must be positive, got {args.cores}")
    if not 0 <= args.contention <= MAX_CONTENTION:  # NOTE: also refuses NaN
        raise UsageError(f"--contention must be from 0 to {MAX_CONTENTION}, got {args.contention:g}")
    if args.jobs is not None and args.jobs < 0:
        raise UsageError(f"-j must be 0 (unlimited) or more, got {args.jobs}")
    loaded = load(args.log, args.nvcc_time, args.build_ninja, args.build)
    quiet = args.json == "-"
    if args.against:
        from .compare import compare

        other = load(args.against, args.against_nvcc_time)
        doc = compare(loaded, other)
        if args.json:
            _write(args.json, dumps(doc))
        if args.html:
            from ..report.html import render_compare_html

            _write(args.html, render_compare_html(doc))
        if not quiet:
            sys.stdout.write(report_text.render_compare(doc, args.top))
        return 0
    # the HTML report and the trace draw every step; the JSON lists STEPS_LISTED unless --all-steps
    every_row = args.all_steps or bool(args.html or args.trace)
    doc = analyse(loaded, remove=args.remove, scale=parse_scale(args.scale), jobs=args.jobs,
                  policy=args.policy, cores=args.cores, alpha=args.contention,
                  max_steps=None if every_row else STEPS_LISTED)
    if args.json:
        _write(args.json, dumps(doc if args.all_steps else limit_steps(doc, STEPS_LISTED)))
    if args.html:
        from .report_html import render

        _write(args.html, render(doc))
    if args.trace:
        from .trace import build_trace

        _write(args.trace, strict_json.dumps(build_trace(doc), "trace", separators=(",", ":")) + "\n")
    if not quiet:
        sys.stdout.write(report_text.render(doc, args.top))
        written = [f for f in (args.json, args.html, args.trace) if f]
        if written:
            sys.stdout.write(f"wrote {', '.join(written)}\n")
        elif not (args.remove or args.scale):
            sys.stdout.write("next: add --remove GLOB / --scale GLOB=F for a what-if, --html FILE for the report\n")
    return 0
