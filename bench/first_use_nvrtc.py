"""Benchmark: the NVRTC part of a migrated variant's first use, on the CPU machine.

    .venv/bin/python bench/first_use_nvrtc.py PATCHED_LIBRARY_ROOT [--label NAME] [--reps 5]
        # writes bench/results/first_use_nvrtc_<label>.{txt,json}

For every kernel of every codemod manifest under the root: one NVRTC program per variant, exactly
as a host stub builds it on first use (the kernel string, its in-memory headers, the manifest's
options, the CUDA include folders the library's layer passes, one name expression), compiled for
sm_90. Three variants per kernel (first, middle, last of the manifest), `--reps` compiles each;
wall and process CPU time of nvrtcCreateProgram..nvrtcCompileProgram, median per variant. The
module load and launch on the GPU come on top (measured on the device: `docs/results/te_build.md`).

`--option OPT` (repeatable) also compiles every variant with OPT appended to the manifest's
options, alternating with the baseline in the same run, and records both times and cubin sizes
(e.g. `--option=-Ofc=mid --label te_ofc_mid`). A faster option is not a drop-in: it changes the
generated code, so parity and kernel time have to be measured on a GPU before a rule uses it.
`--sass` also disassembles both cubins of every variant (`cuobjdump -sass` on PATH: the
`nvidia-cuda-cuobjdump` and `nvidia-cuda-nvdisasm` wheels) and records whether the machine code is
the same; the cubin bytes are not compared, as NVRTC does not reproduce them byte for byte.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codemod.errors import CodemodError  # noqa: E402
from codemod.verify import nvrtc, programs  # noqa: E402
from codemod.verify.command import build_values as parse_defines  # noqa: E402
from codemod.verify.manifest import find_manifests, load_manifest, root_for  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="a library tree patched by `codemod apply --write`")
    ap.add_argument("--label", default="te")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--option", action="append", default=[], metavar="OPT",
                    help="NVRTC option to compare against the baseline (repeatable)")
    ap.add_argument("--sass", action="store_true", help="with --option: compare the two builds' SASS per variant")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="a build's value of a build define or defined macro, as `codemod verify --define` "
                         "(NDEBUG=1: what a Release build's stubs pass)")
    args = ap.parse_args()
    if args.sass and (not args.option or shutil.which("cuobjdump") is None):
        print("--sass needs --option and cuobjdump (with nvdisasm) on PATH", file=sys.stderr)
        return 2
    setups = [("baseline", [])] + ([("with_options", args.option)] if args.option else [])
    lib = nvrtc.load()
    load0 = os.getloadavg()[0]
    rows = []
    manifests = [load_manifest(path, root_for(path, args.root)) for path in find_manifests(args.root)]
    try:
        build_values = parse_defines(args.define, {d for m in manifests for k in m.kernels for d in k.build_macros})
    except CodemodError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    for manifest in manifests:
        for kernel in manifest.kernels:
            source = manifest.read(kernel.program_path)
            headers = {name: manifest.read(p) for name, p in kernel.headers.items()}
            n = len(kernel.variants)
            for idx in sorted({0, n // 2, n - 1}):
                variant = kernel.variants[idx]
                times = {label: ([], []) for label, _ in setups}
                sizes, cubins = {}, {}
                for _ in range(args.reps):
                    for label, extra in setups:     # alternating: both see the same machine load
                        r = lib.compile(source, kernel.program_path, headers, programs.program_options(kernel, extra, build_values),
                                        [variant.name_expression], arch=programs.target_arch(args.arch, kernel.arch_targets),
                                        include_cuda=kernel.include_cuda_toolkit, include_cccl=kernel.include_cuda_cccl,
                                        keep_cubin=args.sass)
                        if not r.ok:
                            print(f"{kernel.id}: {variant.name_expression} {extra} failed:\n{r.log[:2000]}",
                                  file=sys.stderr)
                            return 1
                        times[label][0].append(r.seconds)
                        times[label][1].append(r.cpu_seconds)
                        sizes[label] = r.cubin_size
                        cubins[label] = r.cubin
                row = {"kernel": kernel.id, "variant": variant.name_expression}
                for label, (walls, cpus) in times.items():
                    prefix = "" if label == "baseline" else "opt_"
                    row.update({f"{prefix}wall_ms_median": round(statistics.median(walls) * 1000, 1),
                                f"{prefix}cpu_ms_median": round(statistics.median(cpus) * 1000, 1),
                                f"{prefix}wall_ms_min": round(min(walls) * 1000, 1),
                                f"{prefix}cubin_bytes": sizes[label]})
                if args.sass:
                    row["same_sass"] = _sass(cubins["baseline"]) == _sass(cubins["with_options"])
                rows.append(row)
    doc = {"schema": "codemod-bench-first-use/1", "library": str(args.label), "arch": args.arch,
           "nvrtc": ".".join(map(str, lib.version)), "reps": args.reps, "cpus": os.cpu_count(),
           "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2),
           "host": platform.platform(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "extra_options": args.option, "defines": build_values, "rows": rows,
           "cpu_ms_median_over_variants": statistics.median(r["cpu_ms_median"] for r in rows) if rows else None,
           "cpu_ms_max_over_variants": max((r["cpu_ms_median"] for r in rows), default=None)}
    if args.sass:
        doc["same_sass"] = sum(r["same_sass"] for r in rows)
    if args.option:
        doc["opt_cpu_ms_median_over_variants"] = statistics.median(r["opt_cpu_ms_median"] for r in rows)
        doc["opt_cpu_ms_max_over_variants"] = max(r["opt_cpu_ms_median"] for r in rows)
    out = REPO / "bench" / "results" / f"first_use_nvrtc_{args.label}"
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"NVRTC first-use compile, one variant per program, {args.arch}, NVRTC {doc['nvrtc']}, "
             f"{args.reps} reps (median), {doc['cpus']} CPUs, load {doc['load_before']} -> {doc['load_after']}"]
    if args.option:
        lines.append(f"baseline vs with {' '.join(args.option)} (alternating): CPU ms, cubin bytes")
        lines += [f"  {r['cpu_ms_median']:7.1f} / {r['opt_cpu_ms_median']:7.1f} ms CPU  "
                  f"{r['cubin_bytes']:7d} / {r['opt_cubin_bytes']:7d} B  {r['variant']}" for r in rows]
    else:
        lines += [f"  {r['cpu_ms_median']:7.1f} ms CPU  {r['wall_ms_median']:7.1f} ms wall  {r['variant']}" for r in rows]
    lines.append(f"median over variants {doc['cpu_ms_median_over_variants']} ms CPU, max {doc['cpu_ms_max_over_variants']} ms")
    if args.sass:
        lines.append(f"same SASS with and without {' '.join(args.option)}: {doc['same_sass']} of {len(rows)} variants")
    if args.option:
        lines.append(f"with {' '.join(args.option)}: median {doc['opt_cpu_ms_median_over_variants']} ms CPU, "
                     f"max {doc['opt_cpu_ms_max_over_variants']} ms")
    out.with_suffix(".txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def _sass(cubin: bytes) -> str:
    """The disassembly of a cubin (`cuobjdump -sass`)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        return subprocess.run(["cuobjdump", "-sass", fh.name], capture_output=True, text=True, check=True).stdout


if __name__ == "__main__":
    sys.exit(main())
