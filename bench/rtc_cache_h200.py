"""Benchmark (GPU host): first use with the NVRTC layer's disk cache (issue 17, acceptance 1-4).

NOTE: phases 1-3 measure the cache as issue 17 built it (its event log, recorded lists, `codemod
warm`, in-process warm-up); issue 29 cut the cache down to key, load, store and a file lock, and
those extras went with it (docs/rtc_cache.md). They need a tree migrated by codemod before that cut
(commit 01fac5b) and that commit's codemod; phase 4 (bench/nvrtc_cold.py) stands alone.

    python bench/rtc_cache_h200.py --driver WORK/driver-migrated --plan WORK/plan.json \
        --patched TE_MIGRATED/transformer_engine/common [--label te_h200] [--procs 8]
        # writes docs/results/rtc_cache_<label>.{json,md}

DRIVER: the parity driver built against a TE tree migrated with the layer's cache (`codemod parity
build --side migrated`, then the driver, as for docs/results/te_build_order.md); PLAN: its plan JSON
(`codemod parity generate`); PATCHED: that tree's transformer_engine/common (manifests, kernel
strings). Standard library and codemod.verify only (ctypes NVRTC and libcuda). Phases, each in
fresh processes with their own cache folder under --work:

1. warm second process: the element-wise combinations (`--bench`) cold in one process (records the
   programs), then again in a new process: first call per combination (host wall, kernel included)
   and the layer's `hit` events (key + disk read). Load only, per variant, element-wise and grouped:
   entry read + checksum + cuModuleLoadData + cuModuleGetFunction of each kernel's first, middle and
   last variant compiled from the manifests (`--load-variants`); the entry is read by the patched
   layer's own rtc_cache.h (a small C++ loader built with g++), the module loaded with ctypes.
2. PROCS processes started together, cold cache: compiles per key over all processes (from the
   layer's event log), and per process the longest wait on another process's compile against that
   key's compile time.
3. the forward+backward step (plan `step`): cold, warm (second process), cold after
   `codemod warm LIST -j CPUS` of the list the cold run recorded (warm-up wall stated), and cold
   with that list compiled by in-process threads (`NVTE_RTC_CACHE_WARM`).
4. cold element-wise first use, where the time goes, every number from a fresh process
   (bench/nvrtc_cold.py): a sequence of distinct element-wise variants compiled in one process, as
   a training process's first step does, without and with the options the layer adds (`layer`:
   the `-pch` options, NVRTC's automatic precompiled headers, which the process's first variant
   creates and the later ones reuse, then `-minimal`; `--pch-arm`: also `pch`, the PCH options
   alone), arms alternating process by process; per variant one process for NVRTC's `--time`
   phases (C++ front end, NVVM optimizer, PTX translation = ptxas) and one for the headers alone
   (the program without its name expression); the module load of those cubins.
   `--nvrtc-extra=-no-cache` adds an option to every measured compile (NVRTC 12.9+ reuses its own
   results for a repeated program; no measured process repeats one, and rows with no optimizer and
   ptxas time are flagged).
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import nvrtc_cold  # noqa: E402

from codemod.verify import nvrtc, programs, rtc_cache  # noqa: E402
from codemod.parity.runner import environment, environment_line  # noqa: E402
from codemod.verify.manifest import load_manifest, root_for  # noqa: E402

ENV = "NVTE_RTC_CACHE"
PHASES = ("warm_second_process", "load_only", "cold_processes", "step", "breakdown")


def _median(xs):
    return round(statistics.median(xs), 3) if xs else None


def _events(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            pid, event, key, ms = line.split()
            out.append({"pid": int(pid), "event": event, "key": key, "ms": float(ms)})
    return out


def _driver(args, work: Path, name: str, only: list[str], cache: Path, extra_env: dict | None = None) -> subprocess.Popen:
    env = {**os.environ, f"{ENV}_DIR": str(cache), f"{ENV}_LOG": str(work / f"{name}.events"),
           f"{ENV}_RECORD": str(work / f"{name}.list"), **(extra_env or {})}
    env.pop(ENV, None)                      # <prefix>=0 would turn the disk cache off
    return subprocess.Popen([str(args.driver), "--bench", str(work / f"{name}.jsonl"), "--reps", str(args.reps),
                             "--only", ",".join(only)], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(work / f"{name}.log", "w"))


def _run(args, work: Path, name: str, only: list[str], cache: Path, extra_env: dict | None = None) -> list[dict]:
    t0 = time.monotonic()
    proc = _driver(args, work, name, only, cache, extra_env)
    if proc.wait() != 0:
        raise SystemExit(f"{name}: driver failed, see {work / (name + '.log')}")
    rows = [json.loads(line) for line in (work / f"{name}.jsonl").read_text().splitlines() if line.strip()]
    print(f"{name}: {len(rows)} combinations in {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return rows


def _first(rows: list[dict]) -> list[float]:
    """First-call times, without the process's first (CUDA context, library init)."""
    return [r["first_ms"] for r in rows[1:]]


class Cuda:
    """Just enough of libcuda to time module loads."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._check(self.lib.cuInit(0), "cuInit")
        dev, self.ctx = ctypes.c_int(), ctypes.c_void_p()
        self._check(self.lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self._check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        self._check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    @staticmethod
    def _check(rc: int, what: str) -> None:
        if rc != 0:
            raise SystemExit(f"{what} failed: CUDA error {rc}")

    def load(self, image: bytes, name: str) -> float:
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        t0 = time.perf_counter()
        self._check(self.lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image)), "cuModuleLoadData")
        self._check(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
        ms = (time.perf_counter() - t0) * 1000
        self.lib.cuModuleUnload(mod)
        return ms


def _variants(args, per_kernel: int):
    """(kernel id, variant name expression, source, headers, options, kernel) of `per_kernel`
    variants spread over every kernel (nvrtc_cold.cover, over nvrtc_cold.manifest_paths: the tree's
    manifests or --manifests; none is an error)."""
    loaded = {}
    for man, kid, i in nvrtc_cold.cover(nvrtc_cold.manifest_paths(args.patched, args.manifests), args.patched,
                                        per_kernel):
        if man not in loaded:
            loaded[man] = load_manifest(Path(man), root_for(Path(man), args.patched))
        m = loaded[man]
        k = next(k for k in m.kernels if k.id == kid)
        yield k.id, k.variants[i].name_expression, m.read(k.program_path), \
            {name: m.read(p) for name, p in k.headers.items()}, programs.program_options(k), k


def _grouped(kernel_id: str) -> bool:
    return "group_" in kernel_id


_LOADER = """#include <chrono>
#include <cstdio>
#include "RTC_CACHE_HEADER"
// argv: keys; the entries are read from $NVTE_RTC_CACHE_DIR by the layer's own code.
int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    NAMESPACE::rtc_cache::Output out;
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = NAMESPACE::rtc_cache::load(argv[i], &out);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%s %d %.4f\\n", argv[i], ok ? 1 : 0, ms);
  }
  return 0;
}
"""


def _loader(args) -> Path:
    """A program reading cache entries with the patched layer's rtc_cache.h (C++ read + checksum)."""
    header = next(args.patched.rglob("rtc_cache.h"), None)
    if header is None:
        raise SystemExit(f"no rtc_cache.h under {args.patched}: migrate with a rule that has nvrtc_layer.cache")
    ns = next(line.split()[1] for line in header.read_text().splitlines()
              if line.startswith("namespace ") and "::" in line)
    dirs = [Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "include", *nvrtc.load().include_dirs]
    nvrtc_h = next((d for d in dirs if (d / "nvrtc.h").is_file()), None)
    if nvrtc_h is None:
        raise SystemExit("nvrtc.h not found (set CUDA_HOME)")
    src = args.work / "rtc_cache_loader.cpp"
    src.write_text(_LOADER.replace("RTC_CACHE_HEADER", str(header)).replace("NAMESPACE", ns))
    exe = args.work / "rtc_cache_loader"
    subprocess.run(["g++", "-std=c++17", "-O2", str(src), "-I", str(nvrtc_h), "-o", str(exe)], check=True)
    return exe


def phase_load_only(args, cuda: Cuda, lib) -> list[dict]:
    """Per variant: the disk entry read and checked by the layer's C++ (rtc_cache::load), then the
    module load and function look-up (cuModuleLoadData, cuModuleGetFunction)."""
    rows, folder = [], Path(tempfile.mkdtemp(prefix="rtc_load_", dir=args.work))
    entries = []
    for kid, expr, src, headers, options, k in _variants(args, args.load_variants):
        r = lib.compile(src, k.program_path, headers, options, [expr], arch=programs.target_arch(args.arch, k.arch_targets), include_cuda=k.include_cuda_toolkit,
                        include_cccl=k.include_cuda_cccl, keep_cubin=True)
        if not r.ok:   # e.g. a kernel only built for sm_100a: listed, not loaded
            print(f"load_only: skipped (NVRTC {args.arch}): {expr[:100]}", file=sys.stderr)
            continue
        key = rtc_cache.hash128(expr.encode() + src.encode())
        (folder / f"{key}.bin").write_bytes(rtc_cache.encode(key, [(expr, r.lowered[expr])], r.cubin, b""))
        entries.append((kid, expr, key, r))
    exe = _loader(args)
    read_ms: dict[str, list[float]] = {}
    for _ in range(args.reps):
        out = subprocess.run([str(exe), *[e[2] for e in entries]], capture_output=True, text=True, check=True,
                             env={**os.environ, f"{ENV}_DIR": str(folder)}).stdout
        for line in out.splitlines():
            key, ok, ms = line.split()
            if ok != "1":
                raise SystemExit(f"the layer's rtc_cache::load refused entry {key}")
            read_ms.setdefault(key, []).append(float(ms))
    for kid, expr, key, r in entries:
        loads = [cuda.load(r.cubin, r.lowered[expr]) for _ in range(args.reps)]
        rows.append({"kernel": kid, "variant": expr, "grouped": _grouped(kid), "cubin_bytes": len(r.cubin),
                     "compile_ms": round(r.seconds * 1000, 1), "read_ms_median": _median(read_ms[key]),
                     "module_load_ms_median": _median(loads),
                     "load_ms_median": round(statistics.median(read_ms[key]) + statistics.median(loads), 3)})
    return rows


def phase_breakdown(args, cuda: Cuda | None) -> dict:
    """Cold element-wise first use in fresh processes (bench/nvrtc_cold.py), plus module loads."""
    work = Path(tempfile.mkdtemp(prefix="cold_", dir=args.work))
    cold = argparse.Namespace(patched=args.patched, manifests=args.manifests, arch=args.arch, reps=args.reps,
                              extra=args.nvrtc_extra)
    paths = nvrtc_cold.manifest_paths(args.patched, args.manifests)
    out = {"sequence": nvrtc_cold.sequence(cold, work, nvrtc_cold.elementwise_variants(paths, args.patched, args.sequence),
                                           nvrtc_cold.arms(pch_arm=args.pch_arm)),
           "rows": nvrtc_cold.breakdown(cold, work, nvrtc_cold.elementwise_variants(paths, args.patched,
                                                                                    args.breakdown_variants))}
    if cuda is not None:
        items = [(m, k, i, args.nvrtc_extra, True)
                 for m, k, i in nvrtc_cold.elementwise_variants(paths, args.patched, args.breakdown_variants)]
        rows = nvrtc_cold.run_worker(work, "module_load", args.patched, args.arch, items, keep_cubin=True)[1:]
        for row, r in zip(out["rows"], rows):
            image = (work / f"module_load.jsonl.{r['pos']}.cubin").read_bytes()
            row["module_load_ms"] = _median([cuda.load(image, r["lowered"]) for _ in range(args.reps)])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--driver", type=Path, help="parity driver built against the migrated TE")
    ap.add_argument("--plan", type=Path, help="the driver's plan JSON")
    ap.add_argument("--cpu-only", action="store_true",
                    help="phase 4 only, without module loads (no GPU): NVRTC's phases on this host")
    ap.add_argument("--patched", type=Path, required=True, help="migrated transformer_engine/common (manifests)")
    ap.add_argument("--manifests", type=Path, default=None,
                    help="folder of apply manifests (*.json) when the tree has no .git of its own")
    ap.add_argument("--phases", default=None,
                    help=f"comma-separated subset of {','.join(PHASES)} (default: all; load_only and breakdown "
                         "need no driver)")
    ap.add_argument("--label", default="te_h200")
    ap.add_argument("--commit", default="", help="codemod commit to record (the device copy has no .git)")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a new temp folder)")
    ap.add_argument("--procs", type=int, default=8, help="processes started together in phase 2")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--load-variants", type=int, default=3, help="variants per kernel for load-only and breakdown")
    ap.add_argument("--max-combos", type=int, default=40, help="element-wise combinations timed (spread over the plan)")
    ap.add_argument("--breakdown-variants", type=int, default=6,
                    help="element-wise variants timed phase by phase, one fresh process each")
    ap.add_argument("--sequence", type=int, default=12,
                    help="distinct element-wise variants compiled in one fresh process (phase 4)")
    ap.add_argument("--nvrtc-extra", action="append", default=[], metavar="OPT",
                    help="option added to every compile of phase 4 (e.g. -no-cache)")
    ap.add_argument("--pch-arm", action="store_true",
                    help="phase 4 also measures the PCH options alone (the arm `pch`), beside the layer's full set")
    args = ap.parse_args()
    args.work = args.work or Path(tempfile.mkdtemp(prefix="rtc_cache_bench_"))
    args.work.mkdir(parents=True, exist_ok=True)
    if args.cpu_only:
        return _cpu_only(args)
    phases = set(args.phases.split(",")) if args.phases else set(PHASES)
    if phases - set(PHASES):
        ap.error(f"--phases: unknown {sorted(phases - set(PHASES))} (known: {', '.join(PHASES)})")
    if phases & {"warm_second_process", "cold_processes", "step"} and (args.driver is None or args.plan is None):
        ap.error("--driver and --plan are needed for the driver phases (or --cpu-only, or --phases load_only,breakdown)")
    plan = json.loads(args.plan.read_text()) if args.plan else {"entries": [], "step": [], "bench_formats": []}
    combos = []
    for e in plan["entries"]:
        for i in e.get("inputs") or plan["input_dtypes"]:
            fmts = [f for f in plan["bench_formats"] if f in (e.get("formats") or plan["bench_formats"])]
            combos += [f"{e.get('label') or e['name']}:{i}:{f}" for f in fmts[:1]]
    step_at = max(1, len(combos) // args.max_combos)
    combos = combos[::step_at][:args.max_combos]
    step = [f"{s['entry']}:{s['input']}:{s['format']}" for s in plan.get("step", [])]
    lib = nvrtc.load()
    doc: dict = {"schema": "codemod-bench-rtc-cache/1", "label": args.label, "arch": args.arch,
                 "nvrtc": ".".join(map(str, lib.version)), "cpus": os.cpu_count(), "host": platform.platform(),
                 "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                 "combinations": combos, "step": step,
                 # GPU and driver, nvcc, the CPUs this process may use (a pinned run sees fewer), commit
                 "environment": environment(commit=args.commit)}

    out = REPO / "docs" / "results" / f"rtc_cache_{args.label}"
    cuda = None

    def phase(name: str, fn) -> None:
        """Run one phase; a failing phase is recorded (error text) and the next ones still run.
        The JSON is rewritten after every phase, so what was measured survives a later failure."""
        t0 = time.monotonic()
        try:
            fn()
        except (Exception, SystemExit) as exc:   # noqa: BLE001 - recorded, not hidden
            doc[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            print(f"{name}: FAILED {exc}", file=sys.stderr)
        doc.setdefault("phase_seconds", {})[name] = round(time.monotonic() - t0, 1)
        out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")

    def p1():
        _phase_warm_second_process(args, doc, combos)

    def p1_load():
        nonlocal cuda
        cuda = Cuda()
        load_rows = phase_load_only(args, cuda, lib)
        doc["load_only"] = {"rows": load_rows,
                            "elementwise_ms_median": _median([r["load_ms_median"] for r in load_rows if not r["grouped"]]),
                            "grouped_ms_median": _median([r["load_ms_median"] for r in load_rows if r["grouped"]]),
                            "max_ms": max((r["load_ms_median"] for r in load_rows), default=None)}

    for name, fn in (("warm_second_process", p1), ("load_only", p1_load),
                     ("cold_processes", lambda: _phase_cold_processes(args, doc, combos)),
                     ("step", lambda: _phase_step(args, doc, step)),
                     ("breakdown", lambda: _phase_breakdown(args, doc, cuda or Cuda()))):
        if name in phases and (name != "step" or step):
            phase(name, fn)
    out.with_suffix(".md").write_text(_markdown(doc))
    print(f"wrote {out}.json and .md (work: {args.work})", file=sys.stderr)
    shutil.rmtree(args.work / "cache1", ignore_errors=True)
    return 0 if not any(isinstance(v, dict) and "error" in v for v in doc.values()) else 1


def _phase_warm_second_process(args, doc: dict, combos: list[str]) -> None:
    cache = args.work / "cache1"
    cold = _run(args, args.work, "p1_cold", combos, cache)
    warm_rows = _run(args, args.work, "p1_warm", combos, cache)
    hits = [e["ms"] for e in _events(args.work / "p1_warm.events") if e["event"] == "hit"]
    doc["warm_second_process"] = {
        "first_use_ms_cold_median": _median(_first(cold)), "first_use_ms_warm_median": _median(_first(warm_rows)),
        "first_use_ms_warm_max": max(_first(warm_rows), default=None),
        "hit_ms_median": _median(hits), "hit_ms_max": max(hits, default=None),
        "compiles_in_warm_process": sum(1 for e in _events(args.work / "p1_warm.events") if e["event"] == "compile"),
        "warm_kernel_ms_ratio_median": _median([w["warm_median_ms"] / c["warm_median_ms"] for c, w in zip(cold, warm_rows)
                                                if c["warm_median_ms"] > 0]),
        "rows": [{"combo": f"{c['entry']}:{c['input']}:{c['format']}", "cold_ms": c["first_ms"], "warm_ms": w["first_ms"]}
                 for c, w in zip(cold, warm_rows)]}


def _phase_cold_processes(args, doc: dict, combos: list[str]) -> None:
    """PROCS processes started together, cold cache."""
    cache = args.work / "cache2"
    t0 = time.monotonic()
    procs = [_driver(args, args.work, f"p2_{i}", combos, cache, {f"{ENV}_LOG": str(args.work / "p2.events")})
             for i in range(args.procs)]
    rcs = [p.wait() for p in procs]
    events = _events(args.work / "p2.events")
    compiles: dict[str, list[float]] = {}
    for e in events:
        if e["event"] == "compile":
            compiles.setdefault(e["key"], []).append(e["ms"])
    waits = [{"key": e["key"], "wait_ms": e["ms"], "compile_ms": max(compiles.get(e["key"], [0.0]))}
             for e in events if e["event"] == "wait"]
    doc["cold_processes"] = {
        "processes": args.procs, "exit_codes": rcs, "wall_s": round(time.monotonic() - t0, 1),
        "keys": len(compiles), "compiles": sum(len(v) for v in compiles.values()),
        "keys_compiled_more_than_once": sum(1 for v in compiles.values() if len(v) > 1),
        "hits": sum(1 for e in events if e["event"] == "hit"),
        "max_wait_ms": max((w["wait_ms"] for w in waits), default=None),
        "waits_longer_than_the_compile": sum(1 for w in waits if w["wait_ms"] > w["compile_ms"] + 50),
        "first_use_ms_median_per_process": [
            _median(_first([json.loads(x) for x in (args.work / f"p2_{i}.jsonl").read_text().splitlines() if x.strip()]))
            for i in range(args.procs)]}


def _phase_step(args, doc: dict, step: list[str]) -> None:
    """The forward + backward step: cold, warm, after `codemod warm`, with in-process warm-up."""
    cache = args.work / "cache3"
    s_cold = _run(args, args.work, "p3_cold", step, cache)
    s_warm = _run(args, args.work, "p3_warm", step, cache)
    warmed = args.work / "cache3w"
    t0 = time.monotonic()
    from codemod.verify import warm  # noqa: F401 (before issue 29: see the NOTE above)

    w = warm.warm(args.work / "p3_cold.list", warmed, os.cpu_count())
    warm_s = time.monotonic() - t0
    s_after = _run(args, args.work, "p3_after_warm", step, warmed)
    s_inproc = _run(args, args.work, "p3_inprocess_warm", step, args.work / "cache3i",
                    {f"{ENV}_WARM": str(args.work / "p3_cold.list"), f"{ENV}_WARM_THREADS": str(os.cpu_count())})
    doc["step"] = {"entries": step, "cold_ms": round(sum(r["first_ms"] for r in s_cold), 1),
                   "warm_disk_cache_ms": round(sum(r["first_ms"] for r in s_warm), 1),
                   "after_codemod_warm_ms": round(sum(r["first_ms"] for r in s_after), 1),
                   "cold_with_in_process_warm_ms": round(sum(r["first_ms"] for r in s_inproc), 1),
                   "codemod_warm_wall_s": round(warm_s, 2),
                   "codemod_warm": {**w, "cache_dir": warmed.name},   # no machine path in the record
                   "warm_kernel_ms": round(sum(r["warm_median_ms"] for r in s_warm), 4)}


def _phase_breakdown(args, doc: dict, cuda) -> None:
    """Where cold first use goes."""
    b = phase_breakdown(args, cuda)
    arms = b["sequence"]["arms"]
    doc["breakdown"] = {**b,
                        "baseline_cpu_ms_median": arms["baseline"]["cpu_ms_median_over_variants"],
                        "layer_options": arms["layer"]["options"],
                        "layer_cpu_ms_median": arms["layer"]["cpu_ms_median_over_variants"],
                        **({"pch_cpu_ms_median": arms["pch"]["cpu_ms_median_over_variants"]} if "pch" in arms else {}),
                        "headers_only_cpu_ms_median": _median([r["headers_only_cpu_ms_median"] for r in b["rows"]]),
                        "module_load_ms_median": _median([r["module_load_ms"] for r in b["rows"] if "module_load_ms" in r])}


def _cpu_only(args) -> int:
    """Phase 4 without module loads (bench/nvrtc_cold.py, written to bench/results/)."""
    argv = [str(args.patched), "--label", args.label, "--arch", args.arch, "--reps", str(args.reps),
            "--sequence", str(args.sequence), "--breakdown", str(args.breakdown_variants), "--identity", "0",
            "--work", str(args.work)]
    argv += ["--manifests", str(args.manifests)] if args.manifests else []
    argv += [f"--extra={o}" for o in args.nvrtc_extra]
    argv += ["--pch-arm"] if args.pch_arm else []
    return nvrtc_cold.main(argv)


def _markdown(d: dict) -> str:
    lines = [f"# NVRTC layer disk cache: first use ({d['label']}, {d['date']})", "",
             f"{d['host']}, {d['cpus']} CPUs, NVRTC {d['nvrtc']}, {d['arch']}; "
             f"{len(d['combinations'])} element-wise combinations (`bench/rtc_cache_h200.py`).", "",
             *([environment_line(d["environment"]), ""] if d.get("environment") else []),
             "| measurement | value | target |", "|---|---|---|"]

    def section(name: str, rows) -> None:
        v = d.get(name)
        if not isinstance(v, dict) or "error" in v:
            why = v["error"].splitlines()[0] if isinstance(v, dict) else "not run"
            lines.append(f"| {name} | **not measured**: {why} | |")
        else:
            lines.extend(rows(v))

    section("warm_second_process", lambda w: [
        f"| 1. warm disk cache, second process: first call per combination, median (max) | "
        f"{w['first_use_ms_warm_median']} ms ({w['first_use_ms_warm_max']} ms); cold {w['first_use_ms_cold_median']} ms | ≤ 5 ms |",
        f"| 1. layer `hit` (key + disk read), median (max) | {w['hit_ms_median']} ms ({w['hit_ms_max']} ms) | |",
        f"| 5. warm kernel time, warm-cache / cold process, median ratio | {w['warm_kernel_ms_ratio_median']} | 1.0 |"])
    section("load_only", lambda lo: [
        f"| 1. load only (entry + module load), element-wise / grouped median | "
        f"{lo['elementwise_ms_median']} / {lo['grouped_ms_median']} ms (max {lo['max_ms']}) | ≤ 5 ms |"])
    section("cold_processes", lambda c: [
        f"| 2. {c['processes']} processes cold: compiles / keys, keys compiled twice | "
        f"{c['compiles']} / {c['keys']}, {c['keys_compiled_more_than_once']} | one per key |",
        f"| 2. longest wait on another process; waits longer than that key's compile | "
        f"{c['max_wait_ms']} ms; {c['waits_longer_than_the_compile']} | 0 |"])
    if d.get("step"):
        section("step", lambda s: [
            f"| 3. fwd+bwd step first use: cold / warm disk cache | {s['cold_ms']} / {s['warm_disk_cache_ms']} ms | ≤ 150 ms warm |",
            f"| 3. cold step after `codemod warm` ({s['codemod_warm_wall_s']} s, {s['codemod_warm']['compiled']} programs) | "
            f"{s['after_codemod_warm_ms']} ms | |",
            f"| 3. cold step, the list compiled in-process (`{ENV}_WARM`, CPU-count threads) | "
            f"{s['cold_with_in_process_warm_ms']} ms | |"])
    section("breakdown", lambda b: [
        f"| 4. cold element-wise NVRTC in a process's sequence, median over variants (CPU ms): baseline / "
        f"layer `{' '.join(b['layer_options'])}` | {b['baseline_cpu_ms_median']} / {b['layer_cpu_ms_median']} ms | "
        "≤ 150 ms |",
        *([f"| 4. the same with the PCH options alone | {b['pch_cpu_ms_median']} ms | |"] if "pch_cpu_ms_median" in b else []),
        f"| 4. headers alone (CPU ms) / module load, median | {b['headers_only_cpu_ms_median']} / "
        f"{b['module_load_ms_median']} ms | |"])
    b = d.get("breakdown")
    if isinstance(b, dict) and "rows" in b:
        seq = nvrtc_cold.markdown({"sequence": b["sequence"], "breakdown": b["rows"], "label": d["label"],
                                   "date": d["date"], "commit": "-", "host": d["host"], "cpus": d["cpus"],
                                   "load_before": "-", "load_after": "-", "nvrtc": d["nvrtc"], "arch": d["arch"],
                                   "reps": "-"})
        lines += [""] + seq.splitlines()[3:]
        lines += ["", "Module load (ms): " + ", ".join(f"{r.get('module_load_ms')}" for r in b["rows"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
