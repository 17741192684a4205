"""Per-TU compile times of TE's activation and cast TUs, original vs migrated, for one target
(issue 14, acceptance 1: sm_100a + fast math): one `nvcc -c` per TU, N at a time, each command
taken from a configured build's compile_commands.json with its arch flags replaced.

    # 1. configure both trees (configure only; no build), e.g. with
    #    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CUDA_ARCHITECTURES=100
    #    -DNVTE_BUILD_ACTIVATION_WITH_FAST_MATH=ON, then make the generated string headers the
    #    migrated units include (a few seconds; nothing is compiled by nvcc):
    python3 bench/te_tu_times.py prep BUILD_ORIG BUILD_MIGR
    # 2. the compiles, in the background (the slowest original TU takes ~17 min): results.jsonl
    #    grows one line per finished compile, so a stopped run keeps what it finished (--resume)
    python3 bench/te_tu_times.py run --tree original=BUILD_ORIG --tree migrated=BUILD_MIGR -j 16 --out DIR
    # 3. the tables
    python3 bench/te_tu_times.py report DIR --json OUT.json --md OUT.md

Each compile: the TU's command from compile_commands.json with every `--generate-code`/`-gencode`/
`-arch`/`--gpu-architecture`/`-code` removed and `-gencode arch=compute_100a,code=sm_100a` added
(`--gencode`), `--use_fast_math` added to TUs matching `--fast-math` (activation/*.cu; TE's
NVTE_BUILD_ACTIVATION_WITH_FAST_MATH adds it to those only), the object written under DIR, and
`--time` rows per TU (host compile, cicc, ptxas). Jobs start longest-first by `--order` (a previous
results.jsonl or report JSON), else grouped TUs first, each original next to its migrated twin so
both trees see the same load. Python standard library only (runs on the device image as is).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shlex
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COMMON = "transformer_engine/common/"
DEFAULT_TUS = ("activation/*.cu", "cast/*.cu")
DEFAULT_FAST_MATH = ("activation/*.cu",)
DEFAULT_GENCODE = "arch=compute_100a,code=sm_100a"
LIMIT_S = 120.0                       # acceptance 1: every activation and cast TU <= 120 s migrated
_ARCH_WITH_VALUE = {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code"}


def _relative(path: str) -> str:
    """A compile database file -> its path under transformer_engine/common (or as given)."""
    p = path.replace("\\", "/")
    i = p.find(COMMON)
    return p[i + len(COMMON):] if i >= 0 else p


def load_units(build: Path, globs: list[str]) -> dict[str, dict]:
    """TU (relative to transformer_engine/common) -> its compile_commands.json entry."""
    db = json.loads((build / "compile_commands.json").read_text())
    out = {}
    for entry in db:
        rel = _relative(entry["file"])
        if rel.endswith(".cu") and any(fnmatch.fnmatch(rel, g) for g in globs):
            out[rel] = entry
    return dict(sorted(out.items()))


def command_for(entry: dict, rel: str, gencode: str, fast_math: bool, obj: Path, time_csv: Path) -> list[str]:
    """The entry's nvcc command for one target: arch flags replaced, the object and --time rows
    under the output folder."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out, it = [args[0]], iter(args[1:])
    for a in it:
        key = a.split("=", 1)[0]
        if key in _ARCH_WITH_VALUE:
            if "=" not in a:
                next(it, None)
            continue
        if a == "-o":
            next(it, None)
            continue
        if a in ("--time", "-time"):
            next(it, None)
            continue
        out.append(a)
    out += ["-gencode", gencode]
    if fast_math and "--use_fast_math" not in out and "-use_fast_math" not in out:
        out.append("--use_fast_math")
    return out + ["--time", str(time_csv), "-o", str(obj)]


def cmd_prep(args) -> int:
    """Build every generated header of each configured tree (the string headers the migrated
    units include, TE's own), nothing else."""
    for build in args.builds:
        listing = subprocess.run(["ninja", "-C", str(build), "-t", "targets", "all"], capture_output=True,
                                 text=True, check=True).stdout
        headers = sorted({line.split(":", 1)[0] for line in listing.splitlines()
                          if line.split(":", 1)[0].endswith(".h") and "string_code_" in line})
        print(f"{build}: {len(headers)} generated string headers", flush=True)
        if headers:
            subprocess.run(["ninja", "-C", str(build), *headers], check=True)
    return 0


def _order(jobs: list[tuple[str, str]], order_file: Path | None) -> list[tuple[str, str]]:
    """Longest first by a previous run's seconds (original side), else `_grouped` TUs first; each
    TU's trees next to each other."""
    known: dict[str, float] = {}
    if order_file is not None:
        text = order_file.read_text()
        rows = json.loads(text)["rows"] if order_file.suffix == ".json" else [json.loads(l) for l in text.splitlines() if l]
        for r in rows:
            known[r["tu"]] = max(known.get(r["tu"], 0.0), float(r.get("seconds") or 0.0))
    trees = []
    for _, tree in jobs:
        if tree not in trees:
            trees.append(tree)
    return sorted(jobs, key=lambda j: (-known.get(j[0], 0.0), "_grouped" not in j[0], j[0], trees.index(j[1])))


def cmd_run(args) -> int:
    out = args.out.resolve()
    (out / "obj").mkdir(parents=True, exist_ok=True)
    (out / "time").mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = set()
    if args.resume and results.is_file():
        done = {(r["tu"], r["tree"]) for r in map(json.loads, results.read_text().splitlines()) if r.get("rc") == 0}
    units: dict[str, dict[str, dict]] = {}
    for spec in args.tree:
        name, _, build = spec.partition("=")
        if not build:
            print(f"--tree {spec!r}: expected NAME=BUILD_DIR", file=sys.stderr)
            return 2
        units[name] = load_units(Path(build), args.tus or list(DEFAULT_TUS))
        print(f"{name}: {len(units[name])} TUs from {build}/compile_commands.json", flush=True)
    jobs = _order([(tu, tree) for tree, by in units.items() for tu in by if (tu, tree) not in done], args.order)
    fast = args.fast_math or list(DEFAULT_FAST_MATH)
    lock = threading.Lock()
    start_all = time.monotonic()
    (out / "run.json").write_text(json.dumps({
        "trees": {t: sorted(u) for t, u in units.items()}, "gencode": args.gencode, "fast_math": fast,
        "jobs": args.jobs, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1))

    def one(job: tuple[str, str]) -> None:
        tu, tree = job
        entry = units[tree][tu]
        stem = tu.replace("/", "__")
        time_csv = out / "time" / f"{tree}__{stem}.csv"
        time_csv.unlink(missing_ok=True)
        cmd = command_for(entry, tu, args.gencode, any(fnmatch.fnmatch(tu, g) for g in fast),
                          out / "obj" / f"{tree}__{stem}.o", time_csv)
        began = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=entry["directory"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output, _ = proc.communicate()
        seconds = time.monotonic() - began
        row = {"tu": tu, "tree": tree, "rc": proc.returncode, "seconds": round(seconds, 2),
               "started_s": round(began - start_all, 2), "cmd": shlex.join(cmd),
               "log_tail": output.decode(errors="replace")[-2000:] if proc.returncode else ""}
        with lock:
            with results.open("a") as f:
                f.write(json.dumps(row) + "\n")
            print(f"{time.strftime('%H:%M:%S')} {tree:10s} {tu:40s} rc={proc.returncode} {seconds:7.1f} s", flush=True)

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(one, jobs))
    print(f"all {len(jobs)} compiles ended in {time.monotonic() - start_all:.1f} s", flush=True)
    return 0


def _phases(csv: Path) -> dict[str, float]:
    """Seconds of host compile, cicc and ptxas from one nvcc --time file, by codemod's own parser
    (standard library only: the repository beside this script is all it needs)."""
    if not csv.is_file():
        return {}
    # NOTE: run as a script (`python3 bench/te_tu_times.py`), sys.path holds bench/, not the
    # repository: without this the import failed on the device and every phase column read "-".
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from codemod.impact.nvcc_time import parse_path

    invocations, _ = parse_path(str(csv))
    ms = {}
    for inv in invocations:
        for k, v in inv.phase_ms().items():
            ms[k] = ms.get(k, 0.0) + v
    return {k: round(v / 1000, 2) for k, v in ms.items() if k in ("host_compile", "cudafe", "cicc", "ptxas") and v}


def _flags(cmd: str | list) -> str:
    """A compile command without its machine: every word naming a path (the compiler, -I folders, the
    source, --time and -o files) left out, the options that change the compile kept."""
    words = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
    kept = []
    for i, w in enumerate(words):
        if "/" in w or (i and words[i - 1] in ("-o", "--time", "-I", "-isystem")) or w in ("-o", "--time", "-I", "-isystem"):
            continue
        kept.append(w)
    return " ".join(kept)


def cmd_report(args) -> int:
    rows = [json.loads(l) for l in (args.dir / "results.jsonl").read_text().splitlines() if l]
    latest: dict[tuple[str, str], dict] = {}
    for r in rows:
        latest[(r["tu"], r["tree"])] = r
    run = json.loads((args.dir / "run.json").read_text()) if (args.dir / "run.json").is_file() else {}
    trees = list(run.get("trees", {})) or sorted({t for _, t in latest})
    for (tu, tree), r in latest.items():
        r["phases"] = _phases(args.dir / "time" / f"{tree}__{tu.replace('/', '__')}.csv")
    tus = sorted({tu for tu, _ in latest}, key=lambda tu: -max(latest.get((tu, t), {}).get("seconds", 0) for t in trees))
    last = max((r["started_s"] + r["seconds"] for r in latest.values()), default=0.0)
    doc = {"schema": "te-tu-times/1", "run": run, "limit_s": LIMIT_S, "span_s": round(last, 1),
           "rows": [{k: v for k, v in r.items() if k != "cmd"} | {"flags": _flags(r.get("cmd", ""))}
                    for r in latest.values()]}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"# TE activation and cast TUs, one `nvcc -c` each: {run.get('gencode', '?')}, "
             f"fast math on {', '.join(run.get('fast_math', []))}, {run.get('jobs', '?')} at a time", "",
             "| TU | " + " | ".join(f"{t} s" for t in trees) + " | " + " | ".join(f"{t} host/cicc/ptxas s" for t in trees)
             + f" | ≤ {LIMIT_S:.0f} s |", "|---|" + "---:|" * (2 * len(trees)) + ":---:|"]
    for tu in tus:
        cells, phases = [], []
        for t in trees:
            r = latest.get((tu, t))
            cells.append("-" if r is None else (f"{r['seconds']:.1f}" if r["rc"] == 0 else f"FAILED rc {r['rc']}"))
            p = (r or {}).get("phases", {})
            phases.append("/".join(f"{p.get(k, 0):.0f}" for k in ("host_compile", "cicc", "ptxas")) if p else "-")
        migrated = latest.get((tu, trees[-1]))
        ok = migrated is not None and migrated["rc"] == 0 and migrated["seconds"] <= LIMIT_S
        lines.append(f"| `{tu}` | " + " | ".join(cells) + " | " + " | ".join(phases) + f" | {'yes' if ok else 'no'} |")
    totals = {t: sum(r["seconds"] for (tu, tt), r in latest.items() if tt == t and r["rc"] == 0) for t in trees}
    lines += ["", "CPU-bound sums (s): " + ", ".join(f"{t} {v:.0f}" for t, v in totals.items())
              + f"; span of the whole run {last:.0f} s (both trees in one pool)."]
    text = "\n".join(lines) + "\n"
    if args.md:
        args.md.write_text(text)
    print(text)
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep", help="make the generated string headers of configured builds")
    p.add_argument("builds", nargs="+", type=Path)
    p = sub.add_parser("run", help="compile each TU of each tree, N at a time")
    p.add_argument("--tree", action="append", required=True, help="NAME=BUILD_DIR (repeatable; last one = migrated)")
    p.add_argument("--tus", action="append", help=f"TU globs under {COMMON} (default {', '.join(DEFAULT_TUS)})")
    p.add_argument("--fast-math", action="append", help=f"TUs given --use_fast_math (default {DEFAULT_FAST_MATH[0]})")
    p.add_argument("--gencode", default=DEFAULT_GENCODE)
    p.add_argument("-j", "--jobs", type=int, default=16)
    p.add_argument("--order", type=Path, help="results.jsonl or report JSON of an earlier run: longest first")
    p.add_argument("--resume", action="store_true", help="skip TUs that already compiled in --out")
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("report", help="JSON + markdown tables from a run folder")
    p.add_argument("dir", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument("--md", type=Path)
    args = ap.parse_args(argv)
    return {"prep": cmd_prep, "run": cmd_run, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
