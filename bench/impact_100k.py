"""Benchmark: `codemod impact` on a synthetic 100,000-step ninja log (v7, one build, -j 64).

    .venv/bin/python bench/impact_100k.py            # writes bench/results/impact_100k.{txt,json}

End to end through the CLI (parse, replay as recorded, replay with a what-if, JSON document written
to a file) plus a breakdown by stage. Median of 7 runs after one warm-up; the machine may be shared,
so the load average before and after the runs, and the process's CPU time per run, are recorded with
the timings.
"""

from __future__ import annotations

import contextlib
import datetime
import heapq
import io
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

from codemod.cli import main  # noqa: E402
from codemod.impact import ninja_log  # noqa: E402
from codemod.impact.command import dumps  # noqa: E402
from codemod.impact.predict import analyse, load  # noqa: E402

STEPS, JOBS, PER_LIB, RUNS = 100_000, 64, 1000, 7


def synthetic_log(path: Path) -> None:
    """Libraries of 999 objects + 1 link each; objects run in manifest order on 64 slots, a link
    starts once its objects are done. Durations from a fixed LCG (deterministic)."""
    state = 12345

    def rand() -> float:
        nonlocal state
        state = (state * 6364136223846793005 + 1442695040888963407) % 2**64
        return (state >> 11) / 2**53

    slots = [0] * JOBS
    heapq.heapify(slots)
    lines = []
    lib_end = 0
    for i in range(STEPS):
        lib = i // PER_LIB
        last = i % PER_LIB == PER_LIB - 1
        start = heapq.heappop(slots)
        if last:
            start = max(start, lib_end)
            dur = 200 + int(rand() * 800)
            out = f"lib/liblib{lib:03d}.so"
            lib_end = 0
        else:
            dur = 50 + int(rand() ** 3 * 30000)
            out = f"CMakeFiles/lib{lib:03d}.dir/src/dir{i % 37:02d}/file{i:06d}.cu.o"
        end = start + dur
        if not last:
            lib_end = max(lib_end, end)
        heapq.heappush(slots, end)
        lines.append((end, start, out, f"{(i * 2654435761) % 2**64:x}"))
    lines.sort()
    with open(path, "w") as fh:
        fh.write("# ninja log v7\n")
        for end, start, out, h in lines:
            fh.write(f"{start}\t{end}\t{1795990000000000000 + start * 1000000}\t{out}\t{h}\n")


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            return next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), platform.machine())
    except OSError:
        return platform.machine()


def commit() -> str:
    """HEAD, marked when the measured code (codemod/impact) has uncommitted changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()
    try:
        return git("rev-parse", "--short=12", "HEAD") + (" + uncommitted codemod/impact changes"
                                                        if git("status", "--porcelain", "--", "codemod/impact") else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main_bench() -> dict:
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "synthetic_100k.ninja_log"
        synthetic_log(log)
        out = Path(tmp) / "doc.json"
        argv = ["impact", str(log), "--remove", "dir07/*", "--scale", "dir11/*=0.5", "--json", str(out)]

        def cli():
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(argv) == 0

        cli()  # warm-up
        end_to_end, cpu = [], []
        for _ in range(RUNS):
            c = time.process_time()
            end_to_end.append(timed(cli))
            cpu.append(time.process_time() - c)
        doc = json.loads(out.read_text())
        parse_t = [timed(lambda: ninja_log.parse_path(str(log))) for _ in range(RUNS)]
        loaded = load(str(log))
        analyse_t = [timed(lambda: analyse(loaded, remove=["dir07/*"], scale={"dir11/*": 0.5})) for _ in range(RUNS)]
        d = analyse(loaded, remove=["dir07/*"], scale={"dir11/*": 0.5})
        json_t = [timed(lambda: dumps(d)) for _ in range(RUNS)]
        size = log.stat().st_size
        doc_size = out.stat().st_size
    return {
        "benchmark": "codemod impact, synthetic 100k-step v7 log",
        "steps": doc["summary"]["measured"]["steps"],
        "log_bytes": size,
        "json_bytes": doc_size,
        "jobs": doc["options"]["jobs"],
        "measured_wall_s": doc["measured_wall_s"],
        "replayed_wall_s": doc["replayed_wall_s"],
        "replay_error_pct": doc["replay_error_pct"],
        "predicted_wall_s": doc["predicted_wall_s"],
        "steps_listed": len(doc["steps"]),
        "end_to_end_s": {"median": round(statistics.median(end_to_end), 3), "min": round(min(end_to_end), 3),
                         "runs": [round(x, 3) for x in end_to_end]},
        # CPU time of this process per run: on a shared machine the wall time also holds the time
        # other processes had the cores
        "end_to_end_cpu_s": {"median": round(statistics.median(cpu), 3), "min": round(min(cpu), 3)},
        "parse_s": round(statistics.median(parse_t), 3),
        "analyse_s": round(statistics.median(analyse_t), 3),
        "json_s": round(statistics.median(json_t), 3),
        "target_s": 2.0,
        "python": platform.python_version(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_avg_before": load_before,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
        "commit": commit(),
    }


if __name__ == "__main__":
    res = main_bench()
    results = REPO / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "impact_100k.json").write_text(json.dumps(res, indent=1) + "\n")
    e = res["end_to_end_s"]
    text = (
        f"{res['benchmark']}\n"
        f"steps {res['steps']}, log {res['log_bytes'] / 1e6:.1f} MB, JSON {res['json_bytes'] / 1e6:.1f} MB "
        f"({res['steps_listed']} rows in steps[]), -j {res['jobs']}\n"
        f"end to end (CLI, --json): median {e['median']:.3f} s, min {e['min']:.3f} s  (target <= {res['target_s']} s)\n"
        f"  runs: {', '.join(f'{x:.3f}' for x in e['runs'])}\n"
        f"  CPU time of the process: median {res['end_to_end_cpu_s']['median']:.3f} s, min {res['end_to_end_cpu_s']['min']:.3f} s\n"
        f"  parse {res['parse_s']:.3f} s, analyse (2 replays + measures) {res['analyse_s']:.3f} s, JSON dump {res['json_s']:.3f} s\n"
        f"replay of the synthetic build: measured {res['measured_wall_s']} s, replayed {res['replayed_wall_s']} s "
        f"({res['replay_error_pct']:+.3f}%)\n"
        f"python {res['python']} on {res['cpu']}, {res['cpu_count']} CPUs; load average (1, 5, 15 min) "
        f"before {res['load_avg_before']}, after {res['load_avg_after']}\n"
        f"{res['date']}, commit {res['commit']}\n"
    )
    (results / "impact_100k.txt").write_text(text)
    sys.stdout.write(text)
