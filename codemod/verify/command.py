"""`codemod verify`: compile every generated kernel string with NVRTC for the target archs and the
generated host code with the library's flags.

With --sass, also compare each covered variant's SASS, nvcc (static) against NVRTC (sass.py).

Exit codes: 0 everything compiled (host compile may be skipped, with the reason printed) and,
with --sass, every compared variant is identical modulo names or its difference explained;
1 a kernel variant or a host unit failed, or an unexplained SASS difference; 2 usage error,
missing manifest, missing NVRTC (or, with --sass, missing nvcc / nvdisasm / cuobjdump), or the
build environment stopped the host compile (a missing library header or package) while every
NVRTC program compiled.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from ..errors import UsageError
from ..text import printable, printable_lines
from .. import strict_json
from .nvrtc import ARCHS


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="compile the generated kernel strings with NVRTC and the host code with nvcc",
                       description="Compile every migrated kernel of a patched library with NVRTC (no GPU needed) "
                                   "and its generated host code with the library's flags.")
    p.add_argument("directory", nargs="?", default=".", type=Path,
                   help="patched library root (default: .); its manifests are those `codemod apply --write` stored")
    p.add_argument("--manifest", action="append", type=Path, default=[], metavar="FILE",
                   help="a manifest written by `codemod apply` (repeatable; default: every one stored for DIR)")
    p.add_argument("--arch", action="append", default=[], metavar="ARCH",
                   help=f"target architecture, repeatable (default: {' '.join(ARCHS)})")
    p.add_argument("--all-variants", action="store_true",
                   help="compile every variant (default: a greedy cover using each axis value at least once)")
    p.add_argument("--kernel", action="append", default=[], metavar="ID", help="only this kernel id (repeatable)")
    p.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                   help="the value a build gives a macro of the rule's options.build_defines (repeatable; "
                        "default: the library's own default, recorded in the manifest)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: CPU count)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the codemod-verify/1 JSON report")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write an HTML page: programs, per-program timing, host compile, failures")
    p.add_argument("--no-host", action="store_true", help="skip the host compile")
    p.add_argument("--compile-db", type=Path, metavar="FILE",
                   help="compile_commands.json of a build of the patched tree (default: configure it with CMake)")
    p.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for that CMake configure, e.g. -DLIB_NVRTC_ROOT=DIR (repeatable)")
    p.add_argument("--host-all", action="store_true",
                   help="compile every unit of the compile database, not only generated / rewritten ones")
    p.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: $CUDACXX, PATH, CUDA toolkit, wheel)")
    p.add_argument("--sass", action="store_true",
                   help="also compile each covered variant statically with nvcc and compare its SASS with the "
                        "NVRTC program's (docs/verify.md, SASS equivalence)")
    p.add_argument("--static-root", type=Path, metavar="DIR",
                   help="with --sass: the library tree whose original headers nvcc compiles (default: DIR; "
                        "an unpatched checkout needs no build tree)")
    p.add_argument("--sass-flag", action="append", default=[], metavar="ARG",
                   help="with --sass: an extra nvcc flag for the static side, e.g. --sass-flag=-I<dir> (repeatable)")
    p.set_defaults(run=run)


def _check_archs(archs: list[str], supported: list[int]) -> None:
    for arch in archs:
        match = re.fullmatch(r"(sm|compute)_(\d+)[af]?", arch)
        if not match:
            raise UsageError(f"unknown architecture {arch!r}", hint="use names like sm_90 or sm_100a")
        if int(match.group(2)) not in supported:
            raise UsageError(f"{arch} is not supported by this NVRTC",
                             hint="supported: " + ", ".join(f"sm_{a}" for a in supported))


def build_values(defines: list[str], known: set[str]) -> dict[str, str]:
    """`--define NAME=VALUE` options: NAME must be a build define or defined macro of a manifest's kernel."""
    out = {}
    for d in defines:
        name, eq, value = d.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z_]\w*", name) or not value:
            raise UsageError(f"--define {d!r}: expected NAME=VALUE")
        if name not in known:
            raise UsageError(f"--define {name}: not a build define of the manifests' kernels",
                             hint="known: " + (", ".join(sorted(known)) or "none (rule keys migrate.options."
                                                                          "build_defines, defined_macros)"))
        out[name] = value
    return out


def run(args) -> int:
    from . import host, nvrtc, programs
    from .manifest import find_manifests, load_manifest, root_for
    from .report import VerifyReport, render

    start = time.perf_counter()
    progress = None if args.quiet else (lambda msg: print(printable_lines(msg), file=sys.stderr, flush=True))
    root: Path = args.directory
    if not root.is_dir():
        raise UsageError(f"not a directory: {root}")
    paths = args.manifest or find_manifests(root)
    if not paths:
        raise UsageError(f"no migration manifest for {root}",
                         hint="run `codemod apply --target NAME --write` first (it keeps the manifest outside the "
                              "tree), pass --manifest FILE (`apply --diff FILE` writes FILE.manifest.json), or "
                              "`codemod apply --target NAME --write` on the migrated tree to store it again")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"manifest not found: {path}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    manifests = [load_manifest(p, root_for(p, root)) for p in paths]
    known = {k.id for m in manifests for k in m.kernels}
    unknown = [k for k in args.kernel if k not in known]
    if unknown:
        raise UsageError(f"unknown kernel id(s): {', '.join(unknown)}", hint="ids: " + ", ".join(sorted(known)))
    values = build_values(args.define, {d for m in manifests for k in m.kernels for d in k.build_macros})
    archs = args.arch or list(ARCHS)
    lib = nvrtc.load()
    _check_archs(archs, lib.supported_archs())
    jobs = args.jobs or os.cpu_count() or 1

    plan = programs.plan(manifests, archs, all_variants=args.all_variants, only=args.kernel,
                         build_values=values)
    tools = None
    if args.sass:
        from . import sass

        tools = sass.find_tools(args.nvcc, f"{lib.version[0]}.{lib.version[1]}")
        for program in plan:
            program.keep_cubin = True
    if progress:
        progress(f"verify: {len(plan)} NVRTC program(s) on {min(jobs, max(1, len(plan)))} process(es), "
                 f"NVRTC {lib.version[0]}.{lib.version[1]}")
    results = programs.run_all(plan, jobs, progress)
    if args.no_host:
        host_report = host.HostReport("skipped", reason="--no-host")
    else:
        host_report = host.verify_host(manifests, manifests[0].root, jobs, compile_db=args.compile_db,
                                       nvcc=args.nvcc, cmake_args=args.cmake_arg, all_units=args.host_all,
                                       progress=progress)
    selected = [k for m in manifests for k in m.kernels if not args.kernel or k.id in args.kernel]
    report = VerifyReport(manifests=[str(p) for p in paths], archs=archs, all_variants=args.all_variants,
                          nvrtc_version=f"{lib.version[0]}.{lib.version[1]}", jobs=jobs, programs=results,
                          host=host_report, seconds=time.perf_counter() - start, kernels=len(selected),
                          variants_total=sum(len(k.variants) for k in selected))
    sass_report = None
    if args.sass:
        sass_report = _run_sass(args, manifests, plan, results, tools, archs, root, jobs, progress)
        report.seconds = time.perf_counter() - start
    print(printable_lines(render(report, verbose=args.verbose)))
    if sass_report is not None:
        print()
        print(printable_lines(sass.render(sass_report)))
    if args.json:
        doc = report.to_json()
        if sass_report is not None:
            doc["sass"] = sass_report.to_json()
            doc["ok"] = doc["ok"] and sass_report.ok
        args.json.write_text(strict_json.dumps(doc, "verify report", indent=1) + "\n")
    if args.html:
        from ..report.html import render_verify_html

        doc = report.to_json() | ({"sass": sass_report.to_json()} if sass_report is not None else {})
        args.html.write_text(render_verify_html(doc, root))
    if report.ok and (sass_report is None or sass_report.ok):
        return 0
    generated_ok = all(p.ok for p in results) and (sass_report is None or sass_report.ok)
    if generated_ok and host_report.status == "environment":
        # NOTE: exit 2, not 1: nothing to fix in the generated code; the build environment is the input at fault
        print(printable(f"codemod: error: the build environment stopped the host check (missing: "
                        f"{', '.join(host_report.missing) or 'see the report'}); every NVRTC program compiled "
                        f"({host_report.remedy})"), file=sys.stderr)
        return 2
    return 1


def _run_sass(args, manifests, plan, results, tools, archs, root, jobs, progress):
    from . import sass
    from .host import load_units

    static_root = (args.static_root or root).resolve()
    if not static_root.is_dir():
        raise UsageError(f"--static-root is not a directory: {static_root}")
    units = load_units(args.compile_db) if args.compile_db else []
    flags = sass.StaticFlags(root=static_root, extra=list(args.sass_flag), units=units)
    by_id = {k.id: (m, k) for m in manifests for k in m.kernels}
    sass_jobs = [sass.SassJob(program=p, result=r, kernel=by_id[p.kernel][1], manifest=by_id[p.kernel][0])
                 for p, r in zip(plan, results)]
    return sass.compare_all(sass_jobs, tools, flags, static_root, archs, jobs, progress)
