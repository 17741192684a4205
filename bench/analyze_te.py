"""Benchmark: `codemod analyze` on TransformerEngine's `transformer_engine/common`, cold and warm.

    TE_SOURCE_DIR=/path/to/TransformerEngine .venv/bin/python bench/analyze_te.py [-j 2]

Cold = a fresh parse cache; warm = the same command again. Runs (a) all of `common` with no
target (every TU, every function) and (b) `--target activation --target cast`. Each run is a
separate `codemod analyze` process, timed end to end. The load average is recorded with the
timings because the machine may be shared. Per stage (from the JSON's `stats`): the parse
stage's wall time, the CPU time of its parses (their sum over the workers) and the workers'
utilisation, and the analysis. Writes bench/results/analyze_te.{json,txt}.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(common: Path, cache: Path, extra: list[str], jobs: int) -> dict:
    env = dict(os.environ, CODEMOD_CACHE_DIR=str(cache))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "a.json"
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "codemod.cli", "analyze", str(common), "-q", "-j", str(jobs),
                               "--json", str(out), *extra], env=env, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        doc = json.loads(out.read_text()) if out.is_file() else {}
    return {"wall_s": round(wall, 2), "exit": proc.returncode, "load_before": round(load0, 2),
            "load_after": round(os.getloadavg()[0], 2), "totals": doc.get("totals"), "stats": doc.get("stats")}


def stages(stats: dict) -> str:
    """Parse stage (wall, CPU of the parses and of the PCH builds, utilisation of the workers), analysis."""
    parse, cpu, pch = stats.get("parse_seconds", 0), stats.get("parse_cpu_seconds", 0), stats.get("pch_cpu_seconds", 0)
    workers = stats.get("workers", 1)
    busy = f"{100 * (cpu + pch) / (parse * workers):.0f}%" if parse else "-"
    return (f"parse {parse} s ({stats.get('parsed', 0)} parses {cpu} s CPU + PCHs {pch} s CPU; "
            f"{workers} workers {busy} busy), "
            f"analysis {stats.get('analysis_seconds', 0)} s, total in-process {stats.get('seconds', 0)} s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    te = os.environ.get("TE_SOURCE_DIR")
    if not te:
        print("set TE_SOURCE_DIR to a TransformerEngine checkout", file=sys.stderr)
        return 2
    common = Path(te) / "transformer_engine" / "common"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    result = {"benchmark": "analyze_te", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "tool_commit": commit, "te_commit": os.environ.get("TE_COMMIT", "d0067d0"), "cpus": os.cpu_count(),
              "cpu": platform.processor() or platform.machine(), "python": platform.python_version(), "jobs": args.j,
              "runs": {}}
    for name, extra in (("all_of_common", []), ("activation_and_cast", ["--target", "activation", "--target", "cast"])):
        with tempfile.TemporaryDirectory() as cache:
            cold = run(common, Path(cache), extra, args.j)
            warm = run(common, Path(cache), extra, args.j)
        result["runs"][name] = {"cold": cold, "warm": warm}
        print(f"{name}: cold {cold['wall_s']} s (load {cold['load_before']}), warm {warm['wall_s']} s "
              f"(load {warm['load_before']}); exit {cold['exit']}/{warm['exit']}; totals {cold['totals']}", flush=True)
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "analyze_te.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"codemod analyze on TE common ({result['te_commit']}), tool {commit}, {result['date']}, "
             f"{result['cpus']} CPUs, -j {args.j}, Python {result['python']}"]
    for name, r in result["runs"].items():
        lines.append(f"{name}: cold {r['cold']['wall_s']} s (load avg {r['cold']['load_before']} -> {r['cold']['load_after']}), "
                     f"warm {r['warm']['wall_s']} s (load avg {r['warm']['load_before']}); "
                     f"parses {r['cold']['stats'] and r['cold']['stats'].get('parses')}, "
                     f"kernels {r['cold']['totals'] and r['cold']['totals'].get('kernels')}, "
                     f"errors {r['cold']['totals'] and r['cold']['totals'].get('errors')}")
        lines.append(f"  cold stages: {stages(r['cold']['stats'] or {})}")
    (out / "analyze_te.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
