"""`codemod analyze`: command-line front of the analysis stage.

Exit codes: 0 analysis done; 1 analysis done with error-level diagnostics in the library's own files
(a TU failed to parse; errors inside third-party headers are a CM0103 warning); 2 usage, rule or input error.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UsageError
from ..text import printable, printable_lines
from ..impact.options import POLICIES


def add_parser(sub) -> None:
    p = sub.add_parser("analyze", help="find kernel templates, their runtime-discoverable axes and fan-out",
                       description="Walk a CUDA library from its entry points to every kernel launch.")
    p.add_argument("directory", help="library source directory (e.g. transformer_engine/common)")
    p.add_argument("--target", action="append", default=[], metavar="NAME",
                   help="rule name in rules/ or a rule file; repeatable (default: every TU, every function)")
    p.add_argument("--compile-db", type=Path, metavar="FILE", help="compile_commands.json for include flags")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the JSON document")
    p.add_argument("--html", type=Path, metavar="FILE", help="write an HTML page")
    p.add_argument("--build-log", type=Path, metavar="LOG", help=".ninja_log of a clean build: price TUs, predict the build")
    p.add_argument("--nvcc-time", type=Path, action="append", default=[], metavar="CSV", help="nvcc --time CSV (repeatable)")
    p.add_argument("--policy", choices=sorted(POLICIES), default=None,
                   help="with --build-log: ninja scheduling policy of the replay (default: from the log "
                        "version; `master` starts the longest work first)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parser processes (default: CPU count)")
    p.add_argument("--no-cache", action="store_true", help="parse everything again")
    p.set_defaults(run=run)


def run(args) -> int:
    from ..model import Analysis
    from ..rule import load_rule
    from .analyze import analyze, dumps

    if args.policy and not args.build_log:
        raise UsageError("--policy needs --build-log")
    rules = [load_rule(t) for t in args.target]
    if args.compile_db is not None and not args.compile_db.is_file():
        raise UsageError(f"compile database not found: {args.compile_db}")
    progress = None if args.quiet else (lambda msg: print(printable_lines(msg), file=sys.stderr, flush=True))
    result: Analysis = analyze(Path(args.directory), rules, compile_db=args.compile_db, jobs=args.jobs,
                               use_cache=not args.no_cache, progress=progress)
    if args.build_log:
        from .pricing import attach_impact

        moved = {k for r in rules for k in (r.raw.get("migrate") or {}).get("kernels", [])}
        attach_impact(result, args.build_log, args.nvcc_time, moved or None, policy=args.policy)
    from ..report.text import render

    print(printable_lines(render(result, verbose=args.verbose)))
    if result.impact and result.impact.get("what_if"):
        from .pricing import prediction_line

        print(printable(prediction_line(result.impact)))
    if args.json:
        args.json.write_text(dumps(result, indent=1) + "\n")
    if args.html:
        from ..report.html import render_html

        rule_kernels = {k for r in rules for k in (r.raw.get("migrate") or {}).get("kernels", [])}
        args.html.write_text(render_html(result, rule_kernels=rule_kernels or None, root=Path(args.directory)))
    return 1 if result.totals["errors"] else 0
