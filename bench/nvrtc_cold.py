"""Cold first use of NVRTC variants, each measured in a fresh process (issue 17, acceptance 4 and 5).

    python bench/nvrtc_cold.py PATCHED [--manifests DIR] [--label NAME] [--reps 5] \
        [--sequence 12] [--breakdown 8] [--identity 3] [--pch-arm] [--candidate=-pch ...]
        # writes bench/results/nvrtc_cold_<label>.{json,md}

PATCHED: a migrated library root (transformer_engine/common); its apply manifests are found as
`codemod verify` finds them, or read from --manifests. Needs NVRTC only (no GPU). Every number
comes from a process that compiled nothing else of the kind measured before:

- sequence: N distinct element-wise variants (the vectorized kernels of
  util/vectorized_pointwise.h as TE launches them for aligned tensors: nvec = 32 / sizeof(input),
  output float/fp16/bf16), compiled one after the other in one fresh process, as the layer does
  on a training process's first step. Arms alternate process by process: baseline (no option
  added) and `layer`, the options the NVRTC layer adds (nvrtc_layer.cache.pch and .minimal:
  codemod.nvrtc_options.LAYER_OPTIONS, which the layer added before issue 29), or `candidate` with --candidate; --pch-arm adds `pch`, the
  PCH options alone. Each rep rotates the order, so every variant is sometimes the process's first
  (which creates the precompiled header with -pch) and mostly a later one. Per variant the median
  over reps of the process CPU time of its compile (robust on a loaded host; wall too).
- breakdown: per variant one fresh process: NVRTC's phases (`--time`: C++ front end, NVVM
  optimizer, PTX translation = ptxas), the headers alone (the program without its name
  expression) in another fresh process.
- headers (`--headers`): the toolkit's fp16/bf16/fp8/fp4 headers alone, one fresh process each.
- identity: a cover of every migrated kernel (K variants each, first to last) compiled by one
  process per arm, both with -frandom-seed=1 (NVRTC otherwise draws names at random per process,
  so no two processes give the same bytes); the SHA-256 of each cubin compared between the
  baseline and the `layer` (or `candidate`) arm.

Each worker process first compiles a trivial program (NVRTC's one-time initialisation, reported
apart). NVRTC 12.9+ can reuse its own in-process results for a repeated program (`-no-cache` turns
that off); no process here compiles a program twice, and rows whose optimizer + ptxas take under
1 ms are flagged. `--worker SPEC` is the per-process entry point (internal).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codemod.verify import nvrtc, programs  # noqa: E402
from codemod.nvrtc_options import LAYER_OPTIONS, PCH_OPTIONS  # noqa: E402
from codemod.verify.manifest import find_manifests, load_manifest, root_for  # noqa: E402

ELEMENTWISE = ("transformer_engine::unary_kernel", "transformer_engine::unary_grad_kernel",
               "transformer_engine::gated_act_kernel", "transformer_engine::dgated_act_kernel")
_SIZE = {"__half": 2, "__nv_bfloat16": 2, "float": 4}
TRIVIAL = "__global__ void codemod_bench_trivial(int *p) { *p = 1; }\n"
SEED = "-frandom-seed=1"


def arms(candidate: list[str] | None = None, pch_arm: bool = False) -> dict[str, list[str]]:
    """The measured arms: baseline, the options the layer adds (or `candidate`), the PCH options alone.
    NOTE: the layer also gives each set of headers its own -pch-dir; the element-wise variants share
    one set, so NVRTC's default folder stands in for it."""
    out = {"baseline": [], **({"candidate": list(candidate)} if candidate else {"layer": list(LAYER_OPTIONS)})}
    if pch_arm:
        out["pch"] = list(PCH_OPTIONS)
    return out


def median(xs):
    return round(statistics.median(xs), 3) if xs else None


def manifest_paths(patched: Path, manifests: Path | None) -> list[Path]:
    paths = sorted(manifests.rglob("*.json")) if manifests else find_manifests(patched)
    if not paths:
        raise SystemExit(f"no apply manifest for {patched}: pass --manifests DIR")
    return paths


def elementwise_variants(paths: list[Path], patched: Path, n: int) -> list[tuple[str, str, int]]:
    """(manifest, kernel id, variant index) of N element-wise variants spread over the launched ones."""
    found = []
    for p in paths:
        m = load_manifest(p, root_for(p, patched))
        for k in m.kernels:
            if k.id not in ELEMENTWISE:
                continue
            for i, v in enumerate(k.variants):
                a = v.axes
                if (a.get("aligned") == "true" and a.get("InputType") in _SIZE
                        and a.get("nvec") == str(32 // _SIZE[a["InputType"]])
                        and a.get("OutputType") in _SIZE):
                    found.append((str(p), k.id, i))
    step = max(1, len(found) // max(1, n))
    return found[::step][:n]


def cover(paths: list[Path], patched: Path, per_kernel: int) -> list[tuple[str, str, int]]:
    """Every kernel of every manifest, `per_kernel` variants spread from first to last."""
    out = []
    for p in paths:
        m = load_manifest(p, root_for(p, patched))
        for k in m.kernels:
            n = len(k.variants)
            picks = sorted({round(i * (n - 1) / max(1, per_kernel - 1)) for i in range(per_kernel)}) if n else []
            out += [(str(p), k.id, i) for i in picks]
    return out


# ---- the worker: one fresh process ---------------------------------------------------------------

def worker(spec_path: Path) -> int:
    """Compile spec["items"] in order in this process; write one JSON line per item to spec["out"]."""
    spec = json.loads(spec_path.read_text())
    lib = nvrtc.load()
    patched = Path(spec["patched"])
    t0, c0 = time.perf_counter(), time.process_time()
    lib.compile(TRIVIAL, "codemod_bench_trivial.cu", {}, [], [], arch=spec["arch"], include_cuda=False)
    init = {"trivial_ms": round((time.perf_counter() - t0) * 1000, 2),
            "trivial_cpu_ms": round((time.process_time() - c0) * 1000, 2)}
    manifests: dict = {}
    cuda_version = programs.cuda_version_options()      # -DCUDA_VERSION as the stubs pass it (read once)
    with open(spec["out"], "w") as out:
        out.write(json.dumps({"init": init}) + "\n")
        for pos, (man, kid, idx, extra, with_name) in enumerate(spec["items"]):
            if man not in manifests:
                manifests[man] = load_manifest(Path(man), root_for(Path(man), patched))
            m = manifests[man]
            k = next(k for k in m.kernels if k.id == kid)
            expr = k.variants[idx].name_expression
            cc = int("".join(ch for ch in spec["arch"][3:] if ch.isdigit()))
            arch = k.arch_targets.get(cc, spec["arch"])
            csv = Path(spec["out"] + f".{pos}.csv")
            csv.unlink(missing_ok=True)
            r = lib.compile(m.read(k.program_path), k.program_path, {n: m.read(h) for n, h in k.headers.items()},
                            programs.program_options(k, extra, cuda_version=cuda_version) + [f"--time={csv}"], [expr] if with_name else [],
                            arch=arch, include_cuda=k.include_cuda_toolkit, include_cccl=k.include_cuda_cccl,
                            keep_cubin=True)
            phases: dict[str, float] = {}
            if csv.exists():
                for line in csv.read_text().splitlines()[1:]:
                    parts = [x.strip() for x in line.split(",")]
                    if len(parts) == 4:
                        phases[parts[1]] = phases.get(parts[1], 0.0) + float(parts[2])
                csv.unlink()
            row = {"pos": pos, "kernel": kid, "index": idx, "variant": expr, "options": extra, "ok": r.ok,
                   "ms": round(r.seconds * 1000, 2), "cpu_ms": round(r.cpu_seconds * 1000, 2), "phases": phases,
                   "cubin_bytes": len(r.cubin or b""), "cubin_sha256": hashlib.sha256(r.cubin or b"").hexdigest(),
                   "pch": [ln.strip() for ln in r.log.splitlines() if "precompiled header" in ln][:2],
                   "error": "" if r.ok else next((ln.strip() for ln in r.log.splitlines() if ln.strip()), "")[:200]}
            if spec.get("keep_cubin") and r.cubin:
                Path(spec["out"] + f".{pos}.cubin").write_bytes(r.cubin)
                row["lowered"] = r.lowered.get(expr)
            out.write(json.dumps(row) + "\n")
            out.flush()
    return 0


def run_worker(work: Path, name: str, patched: Path, arch: str, items: list, keep_cubin: bool = False) -> list[dict]:
    """A fresh process compiling `items` [(manifest, kernel, index, extra options, with name)]."""
    spec = {"patched": str(patched), "arch": arch, "items": items, "out": str(work / f"{name}.jsonl"),
            "keep_cubin": keep_cubin}
    (work / f"{name}.spec.json").write_text(json.dumps(spec))
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(work / f"{name}.spec.json")],
                   check=True)
    return [json.loads(line) for line in (work / f"{name}.jsonl").read_text().splitlines()]


def _phase(row: dict, name: str) -> float:
    return row["phases"].get(name, 0.0)


def _suspect(row: dict) -> bool:
    """NVRTC's own cache answered: no optimizer and no ptxas time for a variant with a kernel."""
    return row["ok"] and _phase(row, "NVVM Optimizer") + _phase(row, "PTX Translation") < 1.0


# ---- the measurements ----------------------------------------------------------------------------

def sequence(args, work: Path, variants: list, arms: dict[str, list[str]]) -> dict:
    per: dict[str, dict[str, list[dict]]] = {arm: {} for arm in arms}
    inits: dict[str, list[float]] = {arm: [] for arm in arms}
    for rep in range(args.reps):
        order = variants[rep % len(variants):] + variants[:rep % len(variants)]
        for arm, extra in (list(arms.items()) if rep % 2 == 0 else list(arms.items())[::-1]):
            rows = run_worker(work, f"seq_{arm}_{rep}", args.patched, args.arch,
                              [(m, k, i, list(extra) + args.extra, True) for m, k, i in order])
            inits[arm].append(rows[0]["init"]["trivial_cpu_ms"])
            for r in rows[1:]:
                if not r["ok"]:
                    raise SystemExit(f"{r['variant']}: NVRTC failed with {extra}")
                per[arm].setdefault(r["variant"], []).append(r)
        print(f"sequence: rep {rep + 1}/{args.reps}", file=sys.stderr)
    out: dict = {"variants": [v for v in per[next(iter(arms))]], "arms": {}}
    for arm in arms:
        rows = per[arm]
        firsts = [r["cpu_ms"] for rs in rows.values() for r in rs if r["pos"] == 0]
        later = [r["cpu_ms"] for rs in rows.values() for r in rs if r["pos"] > 0]
        out["arms"][arm] = {
            "options": arms[arm],
            "per_variant_cpu_ms_median": {v: median([r["cpu_ms"] for r in rs]) for v, rs in rows.items()},
            "per_variant_wall_ms_median": {v: median([r["ms"] for r in rs]) for v, rs in rows.items()},
            "cpu_ms_median_over_variants": median([median([r["cpu_ms"] for r in rs]) for rs in rows.values()]),
            "wall_ms_median_over_variants": median([median([r["ms"] for r in rs]) for rs in rows.values()]),
            "first_in_process_cpu_ms_median": median(firsts),
            "later_in_process_cpu_ms_median": median(later),
            "front_end_ms_median_later": median([_phase(r, "CUDA C++ Frontend") for rs in rows.values()
                                                 for r in rs if r["pos"] > 0]),
            "trivial_init_cpu_ms_median": median(inits[arm]),
            "nvrtc_cache_suspected_rows": sum(_suspect(r) for rs in rows.values() for r in rs),
            "cubin_bytes": {v: sorted({r["cubin_bytes"] for r in rs}) for v, rs in rows.items()}}
    return out


def breakdown(args, work: Path, variants: list) -> list[dict]:
    rows = []
    for j, (m, k, i) in enumerate(variants):
        got: dict[str, list[dict]] = {"baseline": [], "headers_only": []}
        for rep in range(args.reps):
            got["baseline"] += run_worker(work, f"bd_{j}_{rep}", args.patched, args.arch, [(m, k, i, args.extra, True)])[1:]
            got["headers_only"] += run_worker(work, f"bdh_{j}_{rep}", args.patched, args.arch,
                                              [(m, k, i, args.extra, False)])[1:]
        b = got["baseline"]
        rows.append({"kernel": k, "variant": b[0]["variant"],
                     "cpu_ms_median": median([r["cpu_ms"] for r in b]), "wall_ms_median": median([r["ms"] for r in b]),
                     "phases_ms_median": {p: median([_phase(r, p) for r in b]) for p in b[0]["phases"]},
                     "headers_only_cpu_ms_median": median([r["cpu_ms"] for r in got["headers_only"]]),
                     "headers_only_phases_ms_median": {p: median([_phase(r, p) for r in got["headers_only"]])
                                                       for p in got["headers_only"][0]["phases"]},
                     "nvrtc_cache_suspected": sum(_suspect(r) for r in b)})
        print(f"breakdown: {j + 1}/{len(variants)}", file=sys.stderr)
    return rows


def identity(args, work: Path, items: list, candidate: list[str]) -> dict:
    base = run_worker(work, "id_baseline", args.patched, args.arch, [(m, k, i, [SEED] + args.extra, True) for m, k, i in items])[1:]
    cand = run_worker(work, "id_candidate", args.patched, args.arch,
                      [(m, k, i, [SEED] + args.extra + candidate, True) for m, k, i in items])[1:]
    rows, same, compiled = [], 0, 0
    for a, b in zip(base, cand):
        equal = a["ok"] and b["ok"] and a["cubin_sha256"] == b["cubin_sha256"]
        compiled += a["ok"]
        same += equal
        rows.append({"kernel": a["kernel"], "variant": a["variant"], "ok": [a["ok"], b["ok"]], "equal": equal,
                     "cubin_bytes": [a["cubin_bytes"], b["cubin_bytes"]], "candidate_pch": b["pch"],
                     "candidate_error": b.get("error", "")})
    failed = [r for r in rows if r["ok"] == [True, False]]      # no output to compare: not a difference
    return {"candidate": candidate, "variants": len(rows), "compiled": compiled, "byte_identical": same,
            "candidate_failed": len(failed), "candidate_error": failed[0]["candidate_error"] if failed else "",
            "kernels": len({r["kernel"] for r in rows}),
            "not_compiled_for_arch": [r["variant"] for r in rows if not r["ok"][0]], "rows": rows}


HEADER_SETS = {"(none)": [], "cuda_fp16.h": ["cuda_fp16.h"], "cuda_bf16.h": ["cuda_bf16.h"], "cuda_fp8.h": ["cuda_fp8.h"],
               "cuda_fp4.h": ["cuda_fp4.h"], "fp16 + bf16 + fp8 + fp4": ["cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda_fp4.h"]}
_HEADER_PROBE = """
import sys
sys.path.insert(0, sys.argv[1])
from codemod.verify import nvrtc
lib = nvrtc.load()
lib.compile("__global__ void t() {}", "t.cu", {}, [], [], include_cuda=False)
r = lib.compile(sys.argv[2], "probe.cu", {}, ["-default-device"], [], arch=sys.argv[3])
print(int(r.ok), r.cpu_seconds * 1000)
"""


def toolkit_headers(args) -> dict:
    """Which toolkit headers the element-wise programs' front end pays for: a program of nothing but
    `#include <H>` (no kernel), one fresh process per compile; CPU ms, median over reps."""
    out = {}
    for name, headers in HEADER_SETS.items():
        src = "".join(f"#include <{h}>\n" for h in headers)
        xs = []
        for _ in range(args.reps):
            ok, ms = subprocess.run([sys.executable, "-c", _HEADER_PROBE, str(REPO), src, args.arch], capture_output=True,
                                    text=True, check=True).stdout.split()
            if ok != "1":
                raise SystemExit(f"NVRTC failed on {src!r}")
            xs.append(float(ms))
        out[name] = median(xs)
    return out


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(d: dict) -> str:
    lines = [f"# Cold NVRTC first use, fresh processes ({d['label']}, {d['date']})", "",
             f"codemod `{d['commit']}`, {d['host']}, {d['cpus']} CPUs, load average {d['load_before']} before / "
             f"{d['load_after']} after, NVRTC {d['nvrtc']}, {d['arch']}, {d['reps']} reps; `bench/nvrtc_cold.py`. "
             "CPU ms = process CPU time of nvrtcCreateProgram..nvrtcCompileProgram (robust on a busy host); "
             "wall ms are inflated by other processes on this host.", ""]
    s = d.get("sequence")
    if s:
        lines += [f"## Sequence: {len(s['variants'])} distinct element-wise variants, one fresh process per arm and rep", "",
                  "| arm | options | median over variants, CPU ms (wall) | first in process | later ones | front end, later (ms) | trivial init |",
                  "|---|---|---|---|---|---|---|"]
        for arm, a in s["arms"].items():
            lines.append(f"| {arm} | `{' '.join(a['options']) or '-'}` | {a['cpu_ms_median_over_variants']} "
                         f"({a['wall_ms_median_over_variants']}) | {a['first_in_process_cpu_ms_median']} | "
                         f"{a['later_in_process_cpu_ms_median']} | {a['front_end_ms_median_later']} | "
                         f"{a['trivial_init_cpu_ms_median']} |")
        arms = list(s["arms"])
        lines += ["", "| variant | " + " | ".join(f"{a} CPU ms" for a in arms) + " | cubin bytes |",
                  "|---|" + "---|" * len(arms) + "---|"]
        for v in s["variants"]:
            lines.append(f"| `{v[:110]}` | " + " | ".join(str(s["arms"][a]["per_variant_cpu_ms_median"][v]) for a in arms)
                         + f" | {' / '.join(str(s['arms'][a]['cubin_bytes'][v]) for a in arms)} |")
    b = d.get("breakdown")
    if b:
        lines += ["", "## Breakdown: one variant per fresh process (NVRTC `--time`, median ms)", "",
                  "| variant | CPU ms | front end | optimizer | ptxas | headers alone: CPU ms (front end / optimizer / ptxas) |",
                  "|---|---|---|---|---|---|"]
        for r in b:
            p, h = r["phases_ms_median"], r["headers_only_phases_ms_median"]
            lines.append(f"| `{r['variant'][:110]}` | {r['cpu_ms_median']} | {p.get('CUDA C++ Frontend')} | "
                         f"{p.get('NVVM Optimizer')} | {p.get('PTX Translation')} | {r['headers_only_cpu_ms_median']} "
                         f"({h.get('CUDA C++ Frontend')} / {h.get('NVVM Optimizer')} / {h.get('PTX Translation')}) |")
    h = d.get("toolkit_headers")
    if h:
        lines += ["", "## Toolkit headers alone (a program of `#include <H>` only, fresh process, CPU ms)", "",
                  "| headers | CPU ms |", "|---|---|"] + [f"| {n} | {ms} |" for n, ms in h.items()]
    i = d.get("identity")
    if i:
        lines += ["", f"## Byte identity with `{' '.join(i['candidate'])}` (both arms `{SEED}`)", "",
                  f"{i['byte_identical']} of {i['compiled']} compiled variants byte-identical ({i['kernels']} kernels, "
                  f"{i['variants']} variants in the cover; {len(i['not_compiled_for_arch'])} have no {d['arch']} program)."]
        if i.get("candidate_failed"):
            lines.append(f"{i['candidate_failed']} of them did not compile with the candidate's options "
                         f"(first error: `{i['candidate_error']}`).")
        lines += [f"- differs: `{r['variant'][:120]}` {r['cubin_bytes']}" for r in i["rows"] if all(r["ok"]) and not r["equal"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("patched", type=Path, nargs="?", help="migrated library root (transformer_engine/common)")
    ap.add_argument("--manifests", type=Path, default=None, help="folder of apply manifests (*.json)")
    ap.add_argument("--label", default="te_cpu")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sequence", type=int, default=12, help="element-wise variants per process (0: skip)")
    ap.add_argument("--breakdown", type=int, default=6, help="variants timed phase by phase (0: skip)")
    ap.add_argument("--identity", type=int, default=3, help="variants per kernel in the byte-identity cover (0: skip)")
    ap.add_argument("--headers", action="store_true", help="also time the toolkit's fp16/bf16/fp8/fp4 headers alone")
    ap.add_argument("--candidate", action="append", default=None, metavar="OPT",
                    help="option of the candidate arm, in place of the layer's (repeatable; default: the arm `layer`, "
                         f"{' '.join(LAYER_OPTIONS)})")
    ap.add_argument("--pch-arm", action="store_true",
                    help=f"also an arm `pch` in the sequence: {' '.join(PCH_OPTIONS)} alone")
    ap.add_argument("--extra", action="append", default=[], metavar="OPT",
                    help="option added to every compile of both arms (e.g. -no-cache on a host whose NVRTC reuses results)")
    ap.add_argument("--out", type=Path, default=None, help="result stem (default bench/results/nvrtc_cold_<label>)")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    if args.patched is None:
        ap.error("PATCHED is required")
    measured = arms(args.candidate, args.pch_arm)
    candidate = measured.get("candidate") or measured["layer"]   # the arm the identity cover compares
    work = args.work or Path(tempfile.mkdtemp(prefix="nvrtc_cold_"))
    work.mkdir(parents=True, exist_ok=True)
    paths = manifest_paths(args.patched, args.manifests)
    lib = nvrtc.load()
    doc: dict = {"schema": "codemod-bench-nvrtc-cold/1", "label": args.label, "commit": _git_commit(),
                 "host": platform.node() + " " + platform.platform(), "cpus": os.cpu_count(), "arch": args.arch,
                 "nvrtc": ".".join(map(str, lib.version)), "reps": args.reps, "extra": args.extra,
                 "load_before": [round(x, 2) for x in os.getloadavg()],
                 "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    if args.sequence:
        doc["sequence"] = sequence(args, work, elementwise_variants(paths, args.patched, args.sequence), measured)
    if args.breakdown:
        doc["breakdown"] = breakdown(args, work, elementwise_variants(paths, args.patched, args.breakdown))
    if args.headers:
        doc["toolkit_headers"] = toolkit_headers(args)
    if args.identity:
        doc["identity"] = identity(args, work, cover(paths, args.patched, args.identity), candidate)
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out = args.out or REPO / "bench" / "results" / f"nvrtc_cold_{args.label}"
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(markdown(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
