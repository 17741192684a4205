"""Benchmark (no GPU): what an NVRTC program's extra headers cost a variant that does not need them.

    python bench/program_headers.py PATCHED --kernel ID --drop PATTERN [--manifests DIR] \
        [--variants 3] [--reps 4] [--label NAME]
        # writes bench/results/program_headers_<label>.{json,md}

PATCHED: a migrated library root; its apply manifests are found as `codemod verify` finds them, or
read from --manifests. The kernel's program (its kernel string, headers and options from the
manifest) is compiled for one name expression at a time, each in a fresh process (NVRTC's one-time
initialisation done first, apart), in two arms that alternate process by process: `full`, the
program as apply wrote it, and `dropped`, the same program without its `#include` lines that contain
PATTERN. Only variants whose name expression does not contain PATTERN's namespace (`--skip NAME`,
default the part of PATTERN before the first `/`) are measured: those the dropped program still
compiles. Per arm: the median process CPU time of the compile (user + system, robust on a loaded
host) and wall. A variant that fails to compile in either arm stops the run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codemod.verify import nvrtc, programs  # noqa: E402
from codemod.verify.manifest import find_manifests, load_manifest  # noqa: E402


def _kernel(patched: Path, manifests: Path | None, kernel_id: str):
    paths = sorted(manifests.glob("*.json")) if manifests else find_manifests(patched)
    for path in paths:
        m = load_manifest(path, patched)
        for k in m.kernels:
            if k.id == kernel_id:
                return m, k
    raise SystemExit(f"program_headers: no kernel {kernel_id} in the manifests of {patched}")


def worker(spec: dict) -> dict:
    m, k = _kernel(Path(spec["patched"]), Path(spec["manifests"]) if spec["manifests"] else None, spec["kernel"])
    source = m.read(k.program_path)
    if spec["arm"] == "dropped":
        source = "\n".join(line for line in source.splitlines()
                           if not (line.startswith("#include") and spec["drop"] in line))
    headers = {inc: m.read(p) for inc, p in k.headers.items()}
    options = programs.program_options(k)
    nvrtc.compile("__global__ void w() {}", "w.cu", {}, [], [], arch=spec["arch"])      # initialisation
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    res = nvrtc.compile(source, k.program_path, headers, options, [spec["name"]], arch=spec["arch"],
                        include_cuda=k.include_cuda_toolkit, include_cccl=k.include_cuda_cccl)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    return {"ok": res.ok, "wall_ms": (time.perf_counter() - t0) * 1e3,
            "cpu_ms": ((r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)) * 1e3,
            "log": "" if res.ok else res.log_head()[:800]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patched", type=Path, nargs="?")
    ap.add_argument("--kernel", default="transformer_engine::unary_kernel")
    ap.add_argument("--drop", default="cast/fp8/", help="drop the program's #include lines containing this")
    ap.add_argument("--skip", default=None, help="measure only variants whose name expression lacks this "
                    "(default: ::transformer_engine::dispatch::)")
    ap.add_argument("--manifests", type=Path, default=None)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--variants", type=int, default=3)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--label", default="te_cpu")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if args.patched is None:
        ap.error("PATCHED is required")
    skip = args.skip or "::transformer_engine::dispatch::"
    _, k = _kernel(args.patched, args.manifests, args.kernel)
    eligible = [v.name_expression for v in k.variants if skip not in v.name_expression]
    if not eligible:
        raise SystemExit(f"program_headers: every variant of {args.kernel} names {skip}")
    step = max(1, len(eligible) // args.variants)
    chosen = eligible[::step][:args.variants]
    rows = {arm: [] for arm in ("full", "dropped")}
    for rep in range(args.reps):
        for name in chosen:
            for arm in (("full", "dropped") if rep % 2 == 0 else ("dropped", "full")):
                spec = dict(patched=str(args.patched), manifests=str(args.manifests or ""), kernel=args.kernel,
                            arm=arm, drop=args.drop, name=name, arch=args.arch)
                out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True,
                                     text=True)
                r = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"ok": False,
                                                                                                  "log": out.stderr[-800:]}
                if not r["ok"]:
                    raise SystemExit(f"program_headers: {name} failed in arm {arm}:\n{r['log']}")
                rows[arm].append(dict(name=name, **{k: r[k] for k in ("cpu_ms", "wall_ms")}))
    summary = {arm: {"cpu_ms_median": round(statistics.median(r["cpu_ms"] for r in rs), 1),
                     "wall_ms_median": round(statistics.median(r["wall_ms"] for r in rs), 1), "n": len(rs)}
               for arm, rs in rows.items()}
    result = {"schema": "codemod-bench-program-headers/1", "label": args.label,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "host": platform.platform(), "nvrtc": ".".join(map(str, nvrtc.load().version)),
              "kernel": args.kernel, "program": k.program_path, "drop": args.drop, "skip": skip, "arch": args.arch,
              "variants_eligible": len(eligible), "variants_total": len(k.variants), "variants_measured": chosen,
              "reps": args.reps, "summary": summary, "rows": rows}
    stem = REPO / "bench" / "results" / f"program_headers_{args.label}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    f, d = summary["full"], summary["dropped"]
    stem.with_suffix(".md").write_text(
        f"# Extra headers of an NVRTC program, cost to a variant that does not need them ({args.label})\n\n"
        f"{result['date']}, {result['host']}, NVRTC {result['nvrtc']}, {args.arch}. Kernel `{args.kernel}`, program "
        f"`{k.program_path}`; `dropped`: without its `#include` lines containing `{args.drop}`. "
        f"{len(eligible)} of {len(k.variants)} variants name nothing of `{skip}`; {len(chosen)} of them, "
        f"{args.reps} reps, one fresh process per compile, arms alternating (`bench/program_headers.py`).\n\n"
        "| arm | compile CPU, median | wall, median | compiles |\n|---|---:|---:|---:|\n"
        f"| full (as apply writes it) | {f['cpu_ms_median']} ms | {f['wall_ms_median']} ms | {f['n']} |\n"
        f"| dropped | {d['cpu_ms_median']} ms | {d['wall_ms_median']} ms | {d['n']} |\n")
    print(stem.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
