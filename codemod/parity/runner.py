"""Build the original and the migrated library with the library's own build command, build the
generated driver against each, run it (first use, warm times, parity cases) and compare.

Standard library only: this runs on the GPU machine, which has no tree-sitter or libclang; the
driver source and its plan come from `codemod parity generate`.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..errors import CodemodError, UsageError
from .compare import compare_streams, read_dump

SIDES = ("original", "migrated")


class ParityError(CodemodError):
    """A build, the driver build or a driver run failed."""


@dataclass
class RunConfig:
    trees: dict[str, Path]          # side -> library source root
    build_cmd: str                  # with {src} and {build}
    driver: Path                    # generated driver source
    plan: dict                      # the plan JSON written beside it
    work: Path
    out: Path
    seed: int
    shards: int = 11
    reps: int = 20
    nvcc: str = "nvcc"
    arch: str = "sm_90"
    skip_build: bool = False
    timings: bool = True
    clear_pending: bool = False
    commit: str = ""
    label: str = ""
    log: object = None


@dataclass
class Timed:
    seconds: float
    cmd: str
    log: str
    extra: dict = field(default_factory=dict)


def _say(cfg: RunConfig, text: str) -> None:
    if cfg.log is not None:
        print(text, file=cfg.log, flush=True)


REDACTED = "<redacted: the library's command, given on the command line>"


def without_commands(record: dict) -> dict:
    """A `parity build` record for the result: its configure and build commands (the library's
    build recipe, with this machine's paths) replaced; the result document gets committed."""
    return {k: ({**v, "cmd": REDACTED} if isinstance(v, dict) and "cmd" in v else v) for k, v in record.items()}


def _signal_of(returncode: int) -> str:
    """' (SIGFPE)' for a command a signal killed (the shell's 128 + N, or Python's -N), else ''."""
    if returncode < 0:
        number = -returncode
    elif 128 < returncode <= 128 + 64:
        number = returncode - 128
    else:
        return ""
    try:
        return f" ({signal.Signals(number).name})"
    except ValueError:
        return ""


def run_logged(cmd: str, log: Path, cwd: Path | None = None, env: dict | None = None) -> float:
    t0 = time.monotonic()
    with log.open("w") as f:
        proc = subprocess.run(cmd, shell=True, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        raise ParityError(f"`{cmd}` failed with exit code {proc.returncode}{_signal_of(proc.returncode)}",
                          where=str(log), hint="last lines:\n" + log.read_text(errors="replace")[-3000:])
    return seconds


def _build(cfg: RunConfig, side: str) -> Timed:
    build = cfg.work / f"build-{side}"
    cmd = cfg.build_cmd.format(src=shlex.quote(str(cfg.trees[side])), build=shlex.quote(str(build)))
    log = cfg.work / f"build-{side}.log"
    return Timed(run_logged(cmd, log), cmd, log.name)


def _driver(cfg: RunConfig, side: str) -> Path:
    build = (cfg.work / f"build-{side}").resolve()
    exe = cfg.work / f"driver-{side}"
    incs = " ".join(f"-I{shlex.quote(str((cfg.trees[side] / d).resolve()))}"
                    for d in cfg.plan["include_dirs"])
    # NOTE: -cudart shared: the driver and the library must share one runtime instance, or the
    # library's pending errors are invisible to the driver (nvcc links cudart statically by default).
    cmd = (f"{cfg.nvcc} -std=c++17 -O2 -cudart shared -arch={cfg.arch} {incs} {shlex.quote(str(cfg.driver))} "
           f"-o {shlex.quote(str(exe))} -L{shlex.quote(str(build))} -l{cfg.plan['link_name']} "
           + "".join(f"-Xlinker --no-as-needed -l{lib} " for lib in cfg.plan.get("link_libs", []))
           + f"-Xlinker -rpath,{shlex.quote(str(build))}")
    run_logged(cmd, cfg.work / f"driver-{side}.log")
    return exe


def _combos(plan: dict, formats: list[str]) -> list[str]:
    """Bench keys (the driver's `--only`): every entry (its label: a `calls` variant is
    "function/variant") x input x the given formats it is called with; an entry called with none
    of them (e.g. the router's `native`) is timed with its first format."""
    keys = []
    for e in plan["entries"]:
        own = e.get("formats") or formats
        chosen = [f for f in formats if f in own] or own[:1]
        keys += [f"{e.get('label') or e['name']}:{i}:{f}" for i in e.get("inputs") or plan["input_dtypes"]
                 for f in chosen]
    return keys


def _bench(cfg: RunConfig, side: str, exe: Path, name: str, only: list[str]) -> list[dict]:
    out = cfg.work / f"{name}-{side}.jsonl"
    cmd = f"{shlex.quote(str(exe))} --bench {shlex.quote(str(out))} --reps {cfg.reps} --only {','.join(only)}"
    run_logged(cmd, cfg.work / f"{name}-{side}.log")
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def _parity(cfg: RunConfig, side: str, exe: Path) -> tuple[float, list[Path]]:
    dumps = [cfg.work / f"parity-{side}-{i}.bin" for i in range(cfg.shards)]
    t0 = time.monotonic()
    with ThreadPoolExecutor(cfg.shards) as pool:
        list(pool.map(lambda i: run_logged(f"{shlex.quote(str(exe))} --parity {shlex.quote(str(dumps[i]))} "
                                    f"--seed {cfg.seed} --shard {i}/{cfg.shards} "
                                    f"--clear-pending-errors {int(cfg.clear_pending)}",
                                    cfg.work / f"parity-{side}-{i}.log"), range(cfg.shards)))
    return time.monotonic() - t0, dumps


def environment(nvcc: str = "nvcc", commit: str = "") -> dict:
    def out(cmd: str) -> str:
        try:
            return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    gpu = out("nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader")
    version = out(f"{nvcc} --version").splitlines()
    # cpus_usable: the CPUs this process may run on (a build pinned with taskset sees fewer).
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"gpu": gpu, "nvcc": version[-1] if version else "", "cpus": os.cpu_count(), "cpus_usable": usable,
            "host": platform.platform(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "commit": commit}


def environment_line(env: dict) -> str:
    """One markdown line of `environment()`: GPU and driver, nvcc, the CPUs the run could use of the
    machine's (a pinned run shows fewer), the date and the codemod commit."""
    return (f"GPU: {env.get('gpu') or 'none seen'}; {env.get('nvcc') or 'no nvcc'}; {env.get('date', '')}; "
            f"{env.get('cpus_usable')} of {env.get('cpus')} CPUs usable; codemod {env.get('commit') or 'commit not given'}.")


def _median(values: list[float]) -> float | None:
    v = sorted(values)
    return v[len(v) // 2] if v else None


def _join_bench(rows: dict[str, list[dict]]) -> list[dict]:
    keyed = {side: {(r["entry"], r["input"], r["format"]): r for r in rows[side]} for side in SIDES}
    joined = []
    for key in keyed["original"]:
        if key not in keyed["migrated"]:
            continue
        a, b = keyed["original"][key], keyed["migrated"][key]
        joined.append({"entry": key[0], "input": key[1], "format": key[2], "rows": a["rows"], "cols": a["cols"],
                       "first_ms": {"original": a["first_ms"], "migrated": b["first_ms"]},
                       "warm_median_ms": {"original": a["warm_median_ms"], "migrated": b["warm_median_ms"]},
                       "warm_min_ms": {"original": a["warm_min_ms"], "migrated": b["warm_min_ms"]},
                       "ratio": b["warm_median_ms"] / a["warm_median_ms"] if a["warm_median_ms"] else None})
    return joined


def run(cfg: RunConfig) -> dict:
    cfg.work.mkdir(parents=True, exist_ok=True)
    cfg.out.mkdir(parents=True, exist_ok=True)
    for side, tree in cfg.trees.items():
        if not tree.is_dir():
            raise UsageError(f"{side} tree {tree} is not a directory")
        # before any build: a checkout root given for the library root fails only at the driver's
        # compile, after both builds (seen on the H200: the whole parity step lost)
        for d in cfg.plan.get("include_dirs", []):
            if not (tree / d).is_dir():
                raise UsageError(f"{side} tree {tree} has no {d}/, the profile's include folder",
                                 hint="--original and --migrated name the library's root, the folder "
                                      "`codemod analyze` was given (e.g. CHECKOUT/transformer_engine/common)")
    result: dict = {"schema": "codemod-parity/1", "library": cfg.plan["library"], "rule": cfg.plan["rule"],
                    "label": cfg.label, "seed": cfg.seed, "arch": cfg.arch, "environment": environment(cfg.nvcc, cfg.commit)}

    builds = {}
    if not cfg.skip_build:
        _say(cfg, "parity: building both trees")
        with ThreadPoolExecutor(2) as pool:
            done = dict(zip(SIDES, pool.map(lambda s: _build(cfg, s), SIDES)))
        builds = {s: {"seconds": round(t.seconds, 1), "log": t.log} for s, t in done.items()}
        _say(cfg, "parity: builds " + ", ".join(f"{s} {b['seconds']} s" for s, b in builds.items()))
    else:   # builds made by `parity build`: their timings travel with the result
        for side in SIDES:
            if not (cfg.work / f"build-{side}").is_dir():
                raise UsageError(f"--skip-build: no {side} build in {cfg.work / f'build-{side}'}",
                                 hint=f"run `codemod parity build --side {side} --work {cfg.work} ...` first")
            record = cfg.work / f"build-{side}.json"
            if record.is_file():
                builds[side] = without_commands(json.loads(record.read_text()))
    result["builds"] = builds
    result["build_cmd"] = cfg.build_cmd
    with ThreadPoolExecutor(2) as pool:
        exes = dict(zip(SIDES, pool.map(lambda s: _driver(cfg, s), SIDES)))

    # First use of a realistic step, each side in a fresh process (cold).
    step = [f"{s['entry']}:{s['input']}:{s['format']}" for s in cfg.plan.get("step", [])] if cfg.timings else []
    step_rows = {s: _bench(cfg, s, exes[s], "step", step) for s in SIDES} if step else {}
    # First use and warm kernel time per (entry, input, format) at the bench shape, fresh process.
    bench_rows = {s: _bench(cfg, s, exes[s], "bench", _combos(cfg.plan, cfg.plan["bench_formats"]))
                  if cfg.timings else [] for s in SIDES}
    _say(cfg, "parity: timings done")

    parity_seconds, dumps = {}, {}
    for side in SIDES:
        parity_seconds[side], dumps[side] = _parity(cfg, side, exes[side])
        _say(cfg, f"parity: {side} cases in {parity_seconds[side]:.1f} s")
    combos, mismatches, messages = {}, [], []
    for a, b in zip(dumps["original"], dumps["migrated"]):
        with a.open("rb") as fa, b.open("rb") as fb:
            c, m, d = compare_streams(read_dump(fa), read_dump(fb))
        combos.update(c)
        mismatches.extend(m)
        messages.extend(d)

    rows = [asdict(r) for r in sorted(combos.values(), key=lambda r: (r.entry, r.input, r.format))]
    ran = sum(r["ran"] for r in rows)
    equal = sum(r["equal"] for r in rows)
    bench = _join_bench(bench_rows)
    migrated_first = [b["first_ms"]["migrated"] for b in bench[1:]]
    grouped = cfg.plan.get("grouped")
    result.update({
        "parity": {"cases": sum(r["cases"] for r in rows), "ran": ran, "equal": equal,
                   "rejected_by_both": sum(r["rejected"] for r in rows),
                   "bytes_compared": sum(r["bytes_compared"] for r in rows),
                   "combinations_run": sum(1 for r in rows if r["ran"]),
                   "combinations_rejected": sum(1 for r in rows if not r["ran"]),
                   "all_equal": ran > 0 and equal == ran and not mismatches,
                   "status_mismatches": sum(1 for m in mismatches if m.what == "status"),
                   "clear_pending_errors": cfg.clear_pending,
                   "seconds": {s: round(v, 1) for s, v in parity_seconds.items()},
                   "shards": cfg.shards, "shapes": cfg.plan["shapes_rc"], "values": ["random", "edge"],
                   # grouped entry points (not timed): their cases by name
                   **({"grouped_cases": [c["name"] for c in grouped["cases"]]} if grouped else {})},
        "mismatches": [asdict(m) for m in mismatches[:200]],
        "mismatch_count": len(mismatches),
        "message_differences": [asdict(m) for m in messages[:50]],
        "message_difference_count": len(messages),
        "combinations": rows,
        "bench": bench,
        "bench_summary": {
            "shape": cfg.plan["bench_rc"], "reps": cfg.reps,
            "first_call_ms_first_in_process": bench[0]["first_ms"] if bench else None,
            "first_use_ms_migrated_median": _median(migrated_first),
            "first_use_ms_migrated_max": max(migrated_first) if migrated_first else None,
            "first_use_ms_original_median": _median([b["first_ms"]["original"] for b in bench[1:]]),
            "warm_ratio_median": _median([b["ratio"] for b in bench if b["ratio"]]),
            "warm_ratio_min": min((b["ratio"] for b in bench if b["ratio"]), default=None),
            "warm_ratio_max": max((b["ratio"] for b in bench if b["ratio"]), default=None),
        },
        "step": {s: step_rows.get(s, []) for s in SIDES} if step else {},
        "step_first_use_ms": {s: round(sum(r["first_ms"] for r in step_rows[s]), 1) for s in SIDES} if step else {},
        "compile_verified_only": cfg.plan.get("compile_verified_only", []),
        "not_called": cfg.plan.get("not_called", []),
    })
    return result
