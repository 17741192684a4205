"""`codemod impact`: command-line front of the build impact model (report on stdout, files on request)."""

from __future__ import annotations

import sys

from ..errors import UsageError
from ..text import printable, printable_lines
from .. import strict_json
from .options import POLICIES, STEPS_LISTED, add_deprecated_jobs, ninja_jobs


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
    p.add_argument("--what-if", action="append", default=[], metavar="FILE",
                   help="the what-if priced by `apply --build-log --diff F` (F.what_if.json) or `analyze "
                        "--build-log --json F`: replays exactly the prediction those commands print; repeatable: "
                        "several rules' what-ifs over the same log add up")
    p.add_argument("--retarget", metavar="SPEC",
                   help="re-price every CUDA step for the target lists of SPEC (JSON: docs/impact.md, "
                        "`--retarget`), each target from this log's nvcc rows or another build's, with the "
                        "--what-if migration applied per target; needs --nvcc-time")
    p.add_argument("--first", metavar="FILE",
                   help="replay with these sources first in the edge order (one per line, or the diff of a "
                        "build-order edit that `apply --build-log --diff` wrote)")
    p.add_argument("--ninja-jobs", type=int, metavar="N",
                   help="replay with ninja -j N (default: the recorded build's peak concurrency; 0 = unlimited)")
    add_deprecated_jobs(p)
    p.add_argument("--policy", choices=sorted(POLICIES), help="ninja scheduling policy (default: from the log version)")
    p.add_argument("--cores", type=int, metavar="N",
                   help="CPU contention model: processor sharing over N cores (default: off)")
    p.add_argument("--contention", type=float, default=0.0, metavar="ALPHA",
                   help="extra slowdown per co-running job under --cores (default 0)")
    p.add_argument("--floor", action="store_true",
                   help="the floor: the wall once every CUDA step has lost its device phases (everything "
                        "amenable moved to NVRTC), except the --keep steps; needs --nvcc-time")
    p.add_argument("--keep", action="append", default=[], metavar="GLOB=REASON",
                   help="with --floor: steps that stay as recorded, and why (cuDNN frontend graphs, "
                        "CUTLASS/CuTe kernels); repeatable")
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
    from .predict import describe_what_if, limit_steps, load, parse_scale, predict, prediction_line, read_what_if
    from .targets import combine_what_ifs

    if args.cores is not None and args.cores <= 0:
        raise UsageError(f"--cores must be positive, got {args.cores}")
    if not 0 <= args.contention <= MAX_CONTENTION:  # NOTE: also refuses NaN
        raise UsageError(f"--contention must be from 0 to {MAX_CONTENTION}, got {args.contention:g}")
    jobs = ninja_jobs(args)
    if jobs is not None and jobs < 0:
        raise UsageError(f"--ninja-jobs must be 0 (unlimited) or more, got {jobs}")
    if args.against:
        ignored = [flag for flag, given in (("--trace", args.trace), ("--what-if", args.what_if), ("--remove", args.remove),
                                            ("--scale", args.scale), ("--retarget", args.retarget),
                                            ("--first", args.first), ("--ninja-jobs", jobs is not None),
                                            ("--policy", args.policy), ("--cores", args.cores is not None),
                                            ("--all-steps", args.all_steps)) if given]
        if ignored:
            # NOTE: refused rather than ignored: a run that exits 0 without the page asked for looks done
            raise UsageError(f"--against compares two logs step by step; {', '.join(ignored)} "
                             f"do{'es' if len(ignored) == 1 else ''} not apply to it",
                             hint="write the comparison with --json FILE, or run `codemod impact LOG --html F` "
                                  "on each log for its timeline")
    if args.keep and not args.floor:
        raise UsageError("--keep names the steps the floor keeps; it needs --floor")
    if args.floor:
        given = [flag for flag, on in (("--against", args.against), ("--what-if", args.what_if),
                                       ("--retarget", args.retarget), ("--first", args.first),
                                       ("--remove", args.remove), ("--scale", args.scale), ("--html", args.html),
                                       ("--trace", args.trace), ("--cores", args.cores is not None)) if on]
        if given:
            raise UsageError(f"--floor is a what-if of its own; {', '.join(given)} do(es) not apply to it",
                             hint="run the floor alone (with --keep, --ninja-jobs, --policy, --json)")
        if not args.nvcc_time:
            raise UsageError("--floor needs the nvcc --time CSV of the build (--nvcc-time): it removes device phases")
    loaded = load(args.log, args.nvcc_time, args.build_ninja, args.build)
    quiet = args.json == "-"
    if args.floor:
        from .floor import floor_document, parse_keep, render

        doc = floor_document(loaded, parse_keep(args.keep), jobs=jobs, policy=args.policy)
        if args.json:
            _write(args.json, strict_json.dumps(doc, "floor JSON", indent=1) + "\n")
        if not quiet:
            sys.stdout.write(printable_lines(render(doc)))
            opts = doc["options"]
            sys.stdout.write(printable(prediction_line(doc["floor_wall_s"], doc["what_if"], opts["jobs"],
                                                       opts["jobs_source"], opts["policy"])) + "\n")
        return 0
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
            sys.stdout.write(printable_lines(report_text.render_compare(doc, args.top)))
        return 0
    # the HTML report and the trace draw every step; the JSON lists STEPS_LISTED unless --all-steps
    every_row = args.all_steps or bool(args.html or args.trace)
    if args.what_if:
        if args.remove or args.scale:
            raise UsageError("--what-if is the whole what-if; --remove/--scale would change it",
                             hint="use --what-if alone, or --remove/--scale alone")
        what_if = combine_what_ifs([read_what_if(f) for f in args.what_if])
    else:
        what_if = {"remove": args.remove, "scale": parse_scale(args.scale)}
        what_if["description"] = describe_what_if(what_if["remove"], what_if["scale"])
    retarget_rows = None
    if args.retarget:
        from .targets import Source, load_sources, read_retarget, retarget_what_if

        if args.remove or args.scale:
            raise UsageError("--retarget re-prices every CUDA step; --remove/--scale would change it",
                             hint="give the migration as --what-if FILE (from analyze or apply)")
        if not args.nvcc_time:
            raise UsageError("--retarget needs the nvcc --time CSV of the build (--nvcc-time): it prices targets")
        spec, entries = read_retarget(args.retarget)
        migration = what_if if args.what_if else {"remove": [], "scale": {}}
        what_if, retarget_rows = retarget_what_if(Source(loaded, migration), spec, load_sources(entries))
        if args.what_if:
            what_if["description"] += f", with {migration['description']}"
    first = None
    if args.first:
        from .order import first_steps, read_order

        try:
            text = open(args.first, encoding="utf-8").read()
        except OSError as exc:
            raise UsageError(f"cannot read --first {args.first}: {exc.strerror}") from None
        first = first_steps(list(loaded.steps.name), read_order(text))
    doc = predict(loaded, what_if, jobs=jobs, policy=args.policy, cores=args.cores, alpha=args.contention,
                  max_steps=None if every_row else STEPS_LISTED, first=first)
    if retarget_rows is not None:
        doc["retarget"] = {"spec": args.retarget, "units": retarget_rows}
    if args.json:
        _write(args.json, dumps(doc if args.all_steps else limit_steps(doc, STEPS_LISTED)))
    if args.html:
        from .report_html import render

        _write(args.html, render(doc))
    if args.trace:
        from .trace import build_trace

        _write(args.trace, strict_json.dumps(build_trace(doc), "trace", separators=(",", ":")) + "\n")
    if not quiet:
        sys.stdout.write(printable_lines(report_text.render(doc, args.top)))
        opts = doc["options"]
        sys.stdout.write(printable(prediction_line(doc["predicted_wall_s"], what_if["description"], opts["jobs"],
                                                   opts["jobs_source"], opts["policy"])) + "\n")
        written = [f for f in (args.json, args.html, args.trace) if f]
        if written:
            sys.stdout.write(printable(f"wrote {', '.join(written)}") + "\n")
        elif not (args.remove or args.scale or args.what_if):
            sys.stdout.write("next: add --remove GLOB / --scale GLOB=F for a what-if, --html FILE for the report\n")
    return 0
