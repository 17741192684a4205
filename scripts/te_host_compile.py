"""Host compile cost of TransformerEngine translation units that include the headers a migration
rewrites (issue 15, acceptance 4): for each tree (an original or patched TE checkout) and TU, the
string headers are made as TE's CMake makes them (`make_string_header_from_file`), the TU is
compiled with `nvcc -c` for one architecture with `--time`, and the row lists the host phases
(preprocessing, cudafe++, host compile), the total, and the kernel-string bytes the TU includes.

    python scripts/te_host_compile.py --tree before=TE_BEFORE --tree after=TE_AFTER \
        --tu recipe/current_scaling.cu --tu PROBE.cu --repeat 3 --json docs/results/te_host_compile.json

Paths of TUs are relative to transformer_engine/common, or absolute (a probe unit compiled with
each tree's include folders). CPU seconds are nvcc's and its tools' (user + system, from the
children's rusage), less disturbed than wall time on a shared host. With --repeat N the trees
take turns N times per TU and each row keeps the run with the least CPU (every run is recorded). Include folders for the CUDA
libraries TE needs besides the toolkit (cuDNN, cuBLAS, NCCL headers) come from --include.

With --host-only, only the host side runs: the commands `nvcc --dryrun` lists for the compile, less
the device ones (per-arch preprocessing, cicc, ptxas, fatbinary), the host compile given a one-kernel
fatbinary in place of the unit's (the same in the trees compared when device code did not change;
its assembly is the one host cost left out). Each phase's CPU comes from its own process's rusage,
so `host_s` is CPU there, not nvcc's wall clock: a unit whose device side takes many minutes at
sm_100a measures in the time of its host side on a shared machine."""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemod.impact.nvcc_time import parse  # noqa: E402

_CALL = re.compile(r"(?m)^\s*make_string_header_from_file\(\s*([^\s$]\S*)\s+(\S+)\s*\)")
# a migration's block: `foreach(rtc_file IN ITEMS ...)` around the call, the symbol made by
# string(MAKE_C_IDENTIFIER "string_code_${rtc_file}" ...)
_LOOP = re.compile(r"foreach\((\w+) IN ITEMS([^)]*)\)\s*string\(MAKE_C_IDENTIFIER \"string_code_\$\{\1\}\"")


def string_headers(common: Path, out: Path) -> int:
    """The string headers TE's CMakeLists.txt makes from files, written to `out`; how many."""
    template = (common / "util/string_header.h.in").read_text()
    cmake = (common / "CMakeLists.txt").read_text()
    calls = _CALL.findall(cmake)
    for m in _LOOP.finditer(cmake):
        calls += [(f, re.sub(r"\W", "_", f"string_code_{f}")) for f in m.group(2).split()]
    out.mkdir(parents=True, exist_ok=True)
    for path, symbol in calls:
        text = template.replace("@STRING_NAME@", symbol).replace("@STRING@", (common / path).read_text())
        (out / f"{symbol}.h").write_text(text)
    (out / "string_path_cuda_include.h").write_text(
        template.replace("@STRING_NAME@", "string_path_cuda_include").replace("@STRING@", "/usr/local/cuda/include"))
    return len(calls)


def compile_tu(common: Path, tu: str, strings: Path, includes: list[str], arch: str, work: Path,
               host_only_run: bool = False, defines: tuple[str, ...] = ()) -> dict:
    # `sm_100a`, or `compute_100a,sm_100a` as TE's CMake gives an arch-specific target (no generic PTX)
    target = f"--generate-code=arch={arch.split(',')[0]},code={arch.split(',')[1]}" if "," in arch else f"-arch={arch}"
    flags = ["-std=c++17", "--expt-relaxed-constexpr", "-O3", target,
             "-I", str(common / "include"), "-I", str(common), "-I", str(common.parent), "-I", str(strings),
             *(a for inc in includes for a in ("-I", inc)),
             "-DNVTE_BUILD_LEGACY_STATIC_ACTIVATION=0", "-DNVTE_BUILD_ACTIVATION_WITH_FAST_MATH=0",
             *(f"-D{d}" for d in defines)]
    source = common / tu      # an absolute `tu` stays as it is
    deps = subprocess.run(["nvcc", *flags, "-M", str(source)], capture_output=True, text=True)
    if deps.returncode != 0:
        raise SystemExit(f"{tu}: nvcc -M failed:\n{deps.stderr[-3000:]}")
    included = sorted({Path(p) for p in deps.stdout.replace("\\\n", " ").split()[1:] if "string_code_" in p})
    if host_only_run:
        start = time.monotonic()
        phases = host_only(flags, source, work)
        return {"tu": tu, "wall_s": round(time.monotonic() - start, 2), "cpu_s": round(sum(phases.values()), 2),
                "host_s": round(sum(phases.values()), 2), "phases_s": phases,
                "string_headers_included": len(included),
                "string_bytes_included": sum(p.stat().st_size for p in included)}
    csv = work / (tu.replace("/", "_") + ".csv")
    csv.unlink(missing_ok=True)
    start, cpu = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(["nvcc", *flags, "-c", str(source), "-o", str(work / "tu.o"), "--time", str(csv)],
                          capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime   # nvcc and every tool it ran
    if proc.returncode != 0:
        raise SystemExit(f"{tu}: nvcc failed:\n{proc.stderr[-3000:]}")
    with csv.open() as f:
        invocations, _ = parse(f, str(csv))
    phases: dict[str, float] = {}
    for inv in invocations:
        for row in inv.rows:
            phases[row.kind] = phases.get(row.kind, 0.0) + row.ms / 1000
    return {"tu": tu, "wall_s": round(wall, 2), "cpu_s": round(cpu_s, 2),
            "host_s": round(sum(phases.get(k, 0.0) for k in ("host_preprocess", "cudafe", "host_compile")), 2),
            "phases_s": {k: round(v, 2) for k, v in sorted(phases.items())},
            "string_headers_included": len(included),
            "string_bytes_included": sum(p.stat().st_size for p in included)}


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def host_only(flags: list[str], source: Path, work: Path) -> dict:
    """The host phases of `nvcc -c source` alone (see the module's doc): CPU seconds per phase."""
    keep = work / "keep"
    if keep.exists():
        subprocess.run(["rm", "-rf", str(keep)], check=True)
    keep.mkdir(parents=True)
    dry = subprocess.run(["nvcc", *flags, "--dryrun", "--keep", "--keep-dir", str(keep), "-c", str(source),
                          "-o", str(work / "tu.o")], capture_output=True, text=True)
    commands = [line[3:] for line in dry.stderr.splitlines() if line.startswith("#$ ")]
    # nvcc's own tools from the folders nvcc runs them from
    env = {k: v for k, _, v in (c.partition("=") for c in commands)
           if k in ("TOP", "PATH", "LD_LIBRARY_PATH", "CICC_PATH", "NVVMIR_LIBRARY_DIR")}
    final = next((c for c in commands if c.startswith("gcc ") and " -c " in c), "")
    arch = re.search(r"\.(compute_\w+)\.cudafe1\.cpp", final)
    steps: list[tuple[str, str]] = []
    for c in commands:
        tool = c.split()[0]
        device = arch is not None and f".{arch.group(1)}." in c
        if tool == "gcc" and " -E " in c and "-D__CUDA_ARCH__=" not in c:
            steps.append(("host_preprocess", c))
        elif tool == "cudafe++":
            steps.append(("cudafe", c))
        elif tool == "gcc" and " -E " in c and device:
            steps.append(("", c))       # cicc's input, for the stub file
        elif tool == '"$CICC_PATH/cicc"' and device:
            # NOTE: cicc writes the host's stub file (the kernels' registration); -O0, as the stub
            # does not depend on the device optimiser. Not timed: a device phase.
            steps.append(("", c + " -O0"))
        elif tool == "gcc" and " -c " in c:
            steps.append(("host_compile", c))
    if [k for k, _ in steps] != ["host_preprocess", "cudafe", "", "", "host_compile"]:
        raise SystemExit(f"{source}: unexpected nvcc --dryrun steps {[k for k, _ in steps]}")
    # a one-kernel fatbinary where the unit's would be (the stub file includes it by name)
    tiny = work / "tiny"
    if not (tiny / "t.fatbin.c").exists():
        tiny.mkdir(parents=True, exist_ok=True)
        (tiny / "t.cu").write_text("__global__ void k(int *p) { *p = 1; }\n")
        subprocess.run(["nvcc", *[f for f in flags if f.startswith(("-arch", "--generate-code"))], "--keep",
                        "--keep-dir", str(tiny), "-c", str(tiny / "t.cu"), "-o", str(tiny / "t.o")], check=True)
    phases: dict[str, float] = {}
    prologue = "; ".join(f"export {k}={shlex.quote(v)}" for k, v in env.items()) or "true"
    for kind, c in steps:
        if kind == "host_compile":
            for f in keep.glob("*.cudafe1.stub.c"):
                for m in re.finditer(r'#include "([^"]+\.fatbin\.c)"', f.read_text()):
                    (keep / m.group(1)).write_text((tiny / "t.fatbin.c").read_text())
        before = _children_cpu()
        p = subprocess.run(["bash", "-c", f"{prologue}; cd {shlex.quote(str(keep))} && {c}"],
                           capture_output=True, text=True)
        if kind:
            phases[kind] = round(phases.get(kind, 0.0) + _children_cpu() - before, 2)
        if p.returncode != 0:
            raise SystemExit(f"{source}: {kind} failed:\n{p.stderr[-3000:]}")
    return phases


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", required=True, help="LABEL=TE repository root")
    ap.add_argument("--tu", action="append", required=True)
    ap.add_argument("--include", action="append", default=[])
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", required=True)
    ap.add_argument("--host-only", action="store_true", help="the host phases only (see above)")
    ap.add_argument("--define", action="append", default=[], help="NAME[=VALUE] for every compile (NDEBUG)")
    args = ap.parse_args(argv)
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    doc = {"nvcc": nvcc, "arch": args.arch, "repeat": args.repeat, "host_only": args.host_only,
           "defines": args.define, "trees": {}}
    trees = {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.tree:
            label, _, root = spec.partition("=")
            common = Path(root).resolve() / "transformer_engine/common"
            made = string_headers(common, Path(tmp) / label / "string_headers")
            trees[label] = common
            doc["trees"][label] = {"string_headers_made": made, "tus": []}
        for tu in args.tu:
            runs: dict[str, list[dict]] = {label: [] for label in trees}
            for _ in range(args.repeat):
                for label, common in trees.items():
                    load = os.getloadavg()[0]
                    row = compile_tu(common, tu, Path(tmp) / label / "string_headers", args.include, args.arch,
                                     Path(tmp) / label, args.host_only, tuple(args.define))
                    row["load_before"] = round(load, 2)
                    row["load_after"] = round(os.getloadavg()[0], 2)
                    runs[label].append(row)
                    print(label, json.dumps(row), flush=True)
            for label, rows in runs.items():
                best = min(rows, key=lambda r: r["cpu_s"])
                best = dict(best, tu=Path(tu).name if Path(tu).is_absolute() else tu,
                            cpu_s_runs=[r["cpu_s"] for r in rows], wall_s_runs=[r["wall_s"] for r in rows],
                            host_s_runs=[r["host_s"] for r in rows],
                            load_runs=[[r["load_before"], r["load_after"]] for r in rows])
                doc["trees"][label]["tus"].append(best)
    Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
