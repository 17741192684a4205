"""Benchmark: the NVRTC part of a migrated variant's first use, on the CPU machine.

    .venv/bin/python bench/first_use_nvrtc.py PATCHED_LIBRARY_ROOT [--label NAME] [--reps 5]
        # writes bench/results/first_use_nvrtc_<label>.{txt,json}

For every kernel of every codemod manifest under the root: one NVRTC program per variant, exactly
as a host stub builds it on first use (the kernel string, its in-memory headers, the manifest's
options, the CUDA include folders the library's layer passes, one name expression), compiled for
sm_90. Three variants per kernel (first, middle, last of the manifest), `--reps` compiles each;
wall and process CPU time of nvrtcCreateProgram..nvrtcCompileProgram, median per variant. The
module load and launch on the GPU come on top (measured on the device: `docs/results/te_build.md`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codemod.verify import nvrtc  # noqa: E402
from codemod.verify.manifest import find_manifests, load_manifest  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="a library tree patched by `codemod apply --write`")
    ap.add_argument("--label", default="te")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    lib = nvrtc.load()
    load0 = os.getloadavg()[0]
    rows = []
    for path in find_manifests(args.root):
        manifest = load_manifest(path)
        for kernel in manifest.kernels:
            source = manifest.read(kernel.program_path)
            headers = {name: manifest.read(p) for name, p in kernel.headers.items()}
            n = len(kernel.variants)
            for idx in sorted({0, n // 2, n - 1}):
                variant = kernel.variants[idx]
                walls, cpus = [], []
                for _ in range(args.reps):
                    r = lib.compile(source, kernel.program_path, headers, kernel.nvrtc_options,
                                    [variant.name_expression], arch=args.arch,
                                    include_cuda=kernel.include_cuda_toolkit, include_cccl=kernel.include_cuda_cccl)
                    if not r.ok:
                        print(f"{kernel.id}: {variant.name_expression} failed:\n{r.log[:2000]}", file=sys.stderr)
                        return 1
                    walls.append(r.seconds)
                    cpus.append(r.cpu_seconds)
                rows.append({"kernel": kernel.id, "variant": variant.name_expression,
                             "wall_ms_median": round(statistics.median(walls) * 1000, 1),
                             "cpu_ms_median": round(statistics.median(cpus) * 1000, 1),
                             "wall_ms_min": round(min(walls) * 1000, 1)})
    doc = {"schema": "codemod-bench-first-use/1", "library": str(args.label), "arch": args.arch,
           "nvrtc": ".".join(map(str, lib.version)), "reps": args.reps, "cpus": os.cpu_count(),
           "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2),
           "host": platform.platform(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "rows": rows,
           "cpu_ms_median_over_variants": statistics.median(r["cpu_ms_median"] for r in rows) if rows else None,
           "cpu_ms_max_over_variants": max((r["cpu_ms_median"] for r in rows), default=None)}
    out = REPO / "bench" / "results" / f"first_use_nvrtc_{args.label}"
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"NVRTC first-use compile, one variant per program, {args.arch}, NVRTC {doc['nvrtc']}, "
             f"{args.reps} reps (median), {doc['cpus']} CPUs, load {doc['load_before']} -> {doc['load_after']}"]
    lines += [f"  {r['cpu_ms_median']:7.1f} ms CPU  {r['wall_ms_median']:7.1f} ms wall  {r['variant']}" for r in rows]
    lines.append(f"median over variants {doc['cpu_ms_median_over_variants']} ms CPU, max {doc['cpu_ms_max_over_variants']} ms")
    out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
