"""Per-TU compile times of TE's common library, original vs migrated, for one target (issue 14,
acceptance 1: sm_100a + fast math): one compile per TU, N at a time, each command taken from a
configured build's compile_commands.json (nvcc's with their arch flags replaced); and the build
ninja -j N would make of those times, replayed by codemod's impact model.

    # 1. configure both trees (configure only; no build), e.g. with
    #    -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_CUDA_ARCHITECTURES=100
    #    -DNVTE_BUILD_ACTIVATION_WITH_FAST_MATH=ON, then make the generated string headers the
    #    migrated units include (a few seconds; nothing is compiled by nvcc):
    python3 bench/te_tu_times.py prep BUILD_ORIG BUILD_MIGR
    # 2. the compiles, in the background (the slowest original TU takes ~17 min): results.jsonl
    #    grows one line per finished compile, so a stopped run keeps what it finished (--resume).
    #    Default: activation/*.cu and cast/*.cu; --all (= --tus '*'): every compile of the library
    python3 bench/te_tu_times.py run --tree original=BUILD_ORIG --tree migrated=BUILD_MIGR -j 16 --out DIR --commit C
    # 3. the tables
    python3 bench/te_tu_times.py report DIR --json OUT.json --md OUT.md
    # 4. a replay of the build (--all runs): ninja -j 16 over each tree's per-TU times, and the change
    python3 bench/te_tu_times.py replay DIR --tree original --tree migrated -j 16 --json OUT.json

Each nvcc compile (told apart by the compiler word's basename, after a ccache/sccache launcher):
the TU's command from compile_commands.json with every `--generate-code`/`-gencode`/`-arch`/
`--gpu-architecture`/`-code` removed and `-gencode arch=compute_100a,code=sm_100a` added
(`--gencode`, repeatable; `--keep-archs`: the arch flags as configured, e.g. TE's default six-arch
build, whose arch-specific units get sm_75/80/89/90 + 100a/103a/120f), `--use_fast_math` added to TUs matching `--fast-math` (activation/*.cu; TE's
NVTE_BUILD_ACTIVATION_WITH_FAST_MATH adds it to those only), the object written under DIR, and
`--time` rows per TU (host compile, cicc, ptxas). The host-only units (`.cpp`, `.cc`: g++/c++
commands) run as configured, only their object moved: no arch flag, no fast math, no `--time`.
Jobs start longest-first by `--order` (a previous results.jsonl or report JSON), else grouped TUs
first, each original next to its migrated twin so both trees see the same load. run.json records
each tree's TUs in compile_commands.json order, its database's size and the -j its times were
taken at; a run with `--tree` once per session into the same DIR keeps the earlier trees' record.

`replay` is a replay of per-TU times, not a measured build, and says so in its output and JSON
(`kind`, `label`): no configure, no header generation, no link or archive step. Per tree it writes
a synthetic `.ninja_log` v5 (one step per TU, durations from the last successful row of
results.jsonl, steps laid end to end in compile_commands.json order) and replays it with
`codemod.impact.predict` at `-j N` (default: the -j the times were taken at): wall, CPU, the
critical step, the lower bounds, each TU's replayed start and end; with two trees the change in
percent. Order: compile_commands.json's, which follows CMake's source list as ninja's edge ids do;
every compile is independent of the others and tied in ninja's ready queue (1.11: edge id;
1.12+: critical-path weight, equal for all compiles feeding the one link), so ninja starts them in
that order, not longest first. `--ninja-log-dir D` keeps the logs (`codemod impact D/TREE.ninja_log
-j N` gives the same replay; its "measured" row is the end-to-end layout, not a build). It refuses
(exit 2) a tree with a TU that never compiled, or a run.json from before `replay` (no order):
`run --resume` with the same options records the order and compiles only what is missing.
Check on a recorded build (test): TE's sm_90 -j16 log's 97 compiles, as per-TU times in the order
ninja started them, replay to 554.7 s, where its last compile ends in codemod impact's replay of
the whole log; the build measured 556.3 s with its 1.6 s link.

`run` and `report` need the Python standard library only (run on the device image as is);
`replay` imports codemod's impact model, so numpy too (the device image has it). Each finds
codemod in the repository beside this script: it is not installed on the device.

The whole library on one 16-core device, within its 10-minute call limit (30 min of device time a
session: the original's slowest TU alone is ~17 min at sm_100a, so both trees fit in one session
only tightly; one tree per session into the same DIR works too). Each call returns in < 10 min:

    # call 1: configure both trees, prep, then start in the background (returns at once)
    scripts/device_bg.sh start $W tu python3 bench/te_tu_times.py run --all \
        --tree original=BUILD_ORIG --tree migrated=BUILD_MIGR -j 16 --out $W/tu
    # calls 2, 3, ...: poll; copy what finished to $OUT so that it comes back even if the
    # machine is lost (exit 3: still running; 0: all ended)
    scripts/device_bg.sh wait $W 540 tu; cp -r $W/tu/results.jsonl $W/tu/run.json $W/tu/time $OUT/
    # a lost machine keeps nothing: configure and prep again, put the copied results.jsonl,
    # run.json and time/ back in $W/tu, and start the same run with --resume (skips what compiled)
    # last call: the tables and the replay
    python3 bench/te_tu_times.py report $W/tu --json $OUT/tu.json --md $OUT/tu.md
    python3 bench/te_tu_times.py replay $W/tu --tree original --tree migrated -j 16 --json $OUT/replay.json
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import shlex
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COMMON = "transformer_engine/common/"
DEFAULT_TUS = ("activation/*.cu", "cast/*.cu")
DEFAULT_FAST_MATH = ("activation/*.cu",)
DEFAULT_GENCODE = "arch=compute_100a,code=sm_100a"
LIMIT_S = 120.0                       # acceptance 1: every activation and cast TU <= 120 s migrated
_ARCH_WITH_VALUE = {"-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code", "--gpu-code"}
_LAUNCHERS = {"ccache", "sccache"}


def _relative(path: str) -> str:
    """A compile database file -> its path under transformer_engine/common (or as given)."""
    p = path.replace("\\", "/")
    i = p.find(COMMON)
    return p[i + len(COMMON):] if i >= 0 else p


def load_units(build: Path, globs: list[str]) -> dict[str, dict]:
    """TU (relative to transformer_engine/common) -> its compile_commands.json entry, in the
    database's order (CMake's source list: ninja's edge order). Any suffix: `.cu`, `.cpp`, `.cc`."""
    db = json.loads((build / "compile_commands.json").read_text())
    out: dict[str, dict] = {}
    for entry in db:
        rel = _relative(entry["file"])
        if any(fnmatch.fnmatch(rel, g) for g in globs):
            if rel in out:
                print(f"{build}: {rel} is in compile_commands.json twice; timed once", file=sys.stderr)
                continue
            out[rel] = entry
    return out


def is_nvcc(args: list[str]) -> bool:
    """Whether a compile command runs nvcc: the compiler word's basename (after a ccache/sccache
    launcher). The host-only units (`.cpp`, `.cc`) are g++/c++ commands."""
    words = [w for w in args[:2] if w]
    if len(words) > 1 and Path(words[0]).name in _LAUNCHERS:
        words = words[1:]
    return bool(words) and Path(words[0]).name in ("nvcc", "nvcc.exe")


def command_for(entry: dict, rel: str, gencode: str | list[str] | None, fast_math: bool, obj: Path,
                time_csv: Path) -> list[str]:
    """The entry's command for one target, the object written to `obj`. nvcc: arch flags replaced
    by `-gencode` for each of `gencode` (None: kept as configured), `--use_fast_math` when asked,
    `--time` rows to `time_csv`. Any other compiler (the
    host-only units): the command as configured, only its `-o` changed (g++ has no arch flag to
    replace and no `--time`; its `-time` is something else)."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    nvcc = is_nvcc(args)
    out, it = [args[0]], iter(args[1:])
    for a in it:
        key = a.split("=", 1)[0]
        if a == "-o":
            next(it, None)
            continue
        if not nvcc:
            out.append(a)
            continue
        if key in _ARCH_WITH_VALUE:
            if gencode is None:
                out.append(a)
                if "=" not in a:
                    out.append(next(it, ""))
            elif "=" not in a:
                next(it, None)
            continue
        if a in ("--time", "-time"):
            next(it, None)
            continue
        out.append(a)
    if not nvcc:
        return out + ["-o", str(obj)]
    for g in [] if gencode is None else [gencode] if isinstance(gencode, str) else gencode:
        out += ["-gencode", g]
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


def _run_record(path: Path, units: dict[str, dict[str, dict]], entries: dict[str, int], globs: list[str],
                fast: list[str], args) -> dict:
    """run.json: this run's options, and per tree its TUs in compile_commands.json order (what
    `replay` schedules by), how many compiles its database holds and the -j its times were taken
    at. Trees of an earlier run into the same folder (`--tree` once per session) are kept."""
    old = json.loads(path.read_text()) if path.is_file() else {}
    per_tree = {"trees": {t: sorted(u) for t, u in units.items()}, "order": {t: list(u) for t, u in units.items()},
                "database_entries": entries, "jobs_by_tree": {t: args.jobs for t in units}}
    doc = {k: {t: v for t, v in old.get(k, {}).items() if t not in units} | new for k, new in per_tree.items()}
    _codemod_importable()
    from codemod.parity.runner import environment  # standard library only, like this script

    return doc | {"tus": globs, "gencode": _gencodes(args) or "as configured", "fast_math": fast, "jobs": args.jobs,
                  "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "environment": environment(commit=args.commit)}


def _gencode_text(g) -> str:
    return " + ".join(g) if isinstance(g, list) else str(g)


def _gencodes(args) -> list[str] | None:
    """The -gencode values of a run: --gencode's (default DEFAULT_GENCODE), None with --keep-archs."""
    return None if args.keep_archs else (args.gencode or [DEFAULT_GENCODE])


def cmd_run(args) -> int:
    out = args.out.resolve()
    (out / "obj").mkdir(parents=True, exist_ok=True)
    (out / "time").mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = set()
    if args.resume and results.is_file():
        done = {(r["tu"], r["tree"]) for r in map(json.loads, results.read_text().splitlines()) if r.get("rc") == 0}
    globs = ["*"] if args.all else (args.tus or list(DEFAULT_TUS))
    units: dict[str, dict[str, dict]] = {}
    entries: dict[str, int] = {}
    for spec in args.tree:
        name, _, build = spec.partition("=")
        if not build:
            print(f"--tree {spec!r}: expected NAME=BUILD_DIR", file=sys.stderr)
            return 2
        every = load_units(Path(build), ["*"])
        units[name] = {tu: e for tu, e in every.items() if any(fnmatch.fnmatch(tu, g) for g in globs)}
        entries[name] = len(every)
        print(f"{name}: {len(units[name])} of {entries[name]} compiles from {build}/compile_commands.json", flush=True)
    jobs = _order([(tu, tree) for tree, by in units.items() for tu in by if (tu, tree) not in done], args.order)
    fast = args.fast_math or list(DEFAULT_FAST_MATH)
    lock = threading.Lock()
    start_all = time.monotonic()
    record = _run_record(out / "run.json", units, entries, globs, fast, args)
    (out / "run.json").write_text(json.dumps(record, indent=1))

    def one(job: tuple[str, str]) -> None:
        tu, tree = job
        entry = units[tree][tu]
        stem = tu.replace("/", "__")
        time_csv = out / "time" / f"{tree}__{stem}.csv"
        time_csv.unlink(missing_ok=True)
        cmd = command_for(entry, tu, _gencodes(args), any(fnmatch.fnmatch(tu, g) for g in fast),
                          out / "obj" / f"{tree}__{stem}.o", time_csv)
        began = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=entry["directory"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output, _ = proc.communicate()
        seconds = time.monotonic() - began
        row = {"tu": tu, "tree": tree, "compiler": "nvcc" if is_nvcc(cmd) else "host", "rc": proc.returncode,
               "seconds": round(seconds, 2),
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


def _codemod_importable() -> None:
    """NOTE: run as a script (`python3 bench/te_tu_times.py`), sys.path holds bench/, not the
    repository, and codemod is not installed on the device: without this the import failed there
    and every phase column read "-"."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def _phases(csv: Path) -> dict[str, float]:
    """Seconds of host compile, cicc and ptxas from one nvcc --time file, by codemod's own parser
    (standard library only: the repository beside this script is all it needs)."""
    if not csv.is_file():
        return {}
    _codemod_importable()
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


def _read_run(folder: Path) -> tuple[list[dict], dict]:
    """A run folder's results.jsonl rows (in the order written: a --resume run appends) and its
    run.json ({} when absent)."""
    rows = [json.loads(l) for l in (folder / "results.jsonl").read_text().splitlines() if l]
    run = json.loads((folder / "run.json").read_text()) if (folder / "run.json").is_file() else {}
    return rows, run


def cmd_report(args) -> int:
    _codemod_importable()
    from codemod.parity.runner import environment_line

    rows, run = _read_run(args.dir)
    latest: dict[tuple[str, str], dict] = {}
    for r in rows:
        latest[(r["tu"], r["tree"])] = r
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
    lines = [f"# TE TUs ({', '.join(run.get('tus', DEFAULT_TUS))}), one compile each: nvcc's at "
             f"{_gencode_text(run.get('gencode', '?'))}, fast math on {', '.join(run.get('fast_math', []))}, "
             f"{run.get('jobs', '?')} at a time", "",
             *([environment_line(run["environment"]), ""] if run.get("environment") else []),
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

REPLAY_LABEL = ("replay of per-TU compile times through codemod's ninja model (codemod impact), not a "
                "measured build: no configure, no header-generating step, no link or archive step, no ninja overhead")
REPLAY_ORDER = ("compile_commands.json order (CMake's source list, ninja's edge order: with every compile "
                "independent and tied, ninja 1.11 and 1.12+ both start ready edges in that order)")
_LOG_ORIGIN_MS = 1_700_000_000_000  # any fixed wall-clock origin: the synthetic log's mtimes agree with it


def synthetic_ninja_log(steps: list[tuple[str, int]]) -> str:
    """A `.ninja_log` v5 whose steps are `(output, duration ms)`, in the given order. NOTE: the steps
    are laid end to end (each starts when the one before ends), which is a layout, not a record:
    start order is what gives the replay its edge order, end times never go backwards and every
    mtime agrees with one origin, so codemod impact reads one cycle of one build, all steps
    independent (no output is a link)."""
    lines, t = ["# ninja log v5"], 0
    for output, ms in steps:
        if "\t" in output or "\n" in output:
            raise ValueError(f"an output name with a tab or newline cannot go in a ninja log: {output!r}")
        end = t + ms
        lines.append(f"{t}\t{end}\t{(_LOG_ORIGIN_MS + end) * 1_000_000}\t{output}\t{zlib.crc32(output.encode()):x}")
        t = end
    return "\n".join(lines) + "\n"


def replay_tree(run: dict, durations: dict[str, float], tree: str, jobs: int, log_path: Path) -> dict:
    """The build ninja -j `jobs` would make of one tree's timed compiles, in the tree's
    compile_commands.json order (run.json `order`), by codemod impact's replay of a synthetic log."""
    order = run.get("order", {}).get(tree)
    if order is None:
        raise ValueError(f"run.json records no compile_commands.json order for tree {tree!r} (a run made before "
                         f"`replay` existed): rerun `run --resume` with the same --tree and --tus to record it "
                         f"(it compiles only what is missing)")
    missing = [tu for tu in order if tu not in durations]
    if missing:
        raise ValueError(f"tree {tree!r}: {len(missing)} of {len(order)} TUs have no successful compile in "
                         f"results.jsonl ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}): "
                         f"finish them with `run --resume`")
    steps = [(f"{tu}.o", round(durations[tu] * 1000)) for tu in order]
    log_path.write_text(synthetic_ninja_log(steps))
    _codemod_importable()
    from codemod.impact.predict import analyse, load

    doc = analyse(load(str(log_path)), jobs=jobs, max_steps=None)
    inputs = doc["inputs"]
    if (inputs["builds_in_log"], inputs["cycles"], inputs["recompacted_lines"]) != (1, 1, 0) \
            or doc["summary"]["replayed"]["steps"] != sum(1 for _, ms in steps if ms > 0):
        raise RuntimeError(f"codemod impact did not read {log_path} as one build of {len(steps)} independent "
                           f"steps: {inputs}")
    by_name = {r["name"]: r for r in doc["steps"]}
    critical = doc["critical"]["replayed"]["step"]
    measured_at = run.get("jobs_by_tree", {}).get(tree, run.get("jobs"))
    outside = sorted(set(durations) - set(order))
    if outside:
        print(f"NOTE: tree {tree!r}: {len(outside)} timed TUs are not in the run's selection, left out "
              f"({', '.join(outside[:3])}{', ...' if len(outside) > 3 else ''})", file=sys.stderr)
    return {
        "tus": len(order),
        "database_entries": run.get("database_entries", {}).get(tree),
        "times_taken_at_jobs": measured_at,
        "replayed_wall_s": doc["replayed_wall_s"],
        "cpu_s": doc["cpu_s_before"],
        "critical_step": critical and {**critical, "name": critical["name"][:-2]},
        "bounds": doc["bounds"]["before"],
        "utilisation": doc["summary"]["replayed"]["utilisation"],
        "policy": doc["options"]["policy"],
        "schedule": [{"tu": tu, "seconds": by_name[f"{tu}.o"]["elapsed_s"],
                      "start_s": by_name[f"{tu}.o"]["replayed"]["start_s"],
                      "end_s": by_name[f"{tu}.o"]["replayed"]["end_s"]} for tu in order],
    }


def _pct(a: float, b: float) -> float | None:
    return round(100.0 * (b - a) / a, 2) if a else None


def cmd_replay(args) -> int:
    if not (args.dir / "results.jsonl").is_file():
        print(f"replay: no results.jsonl in {args.dir} (made by `run --out {args.dir}`)", file=sys.stderr)
        return 2
    rows, run = _read_run(args.dir)
    trees = list(dict.fromkeys(args.tree))
    durations: dict[str, dict[str, float]] = {t: {} for t in trees}
    for r in rows:  # the last successful compile of each TU (a --resume run appends)
        if r["tree"] in durations and r.get("rc") == 0:
            durations[r["tree"]][r["tu"]] = float(r["seconds"])
    jobs = args.jobs or run.get("jobs") or 16
    out: dict[str, dict] = {}
    try:
        import numpy  # noqa: F401  (codemod's impact model needs it; run and report do not)
    except ImportError:
        print("replay needs numpy (codemod's impact model): run it with a python3 that has it "
              "(the device image's, or the project's .venv)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        logs = args.ninja_log_dir or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        for t in trees:
            try:
                out[t] = replay_tree(run, durations[t], t, jobs, logs / f"{t}.ninja_log")
            except ValueError as e:
                print(f"replay: {e}", file=sys.stderr)
                return 2
    doc = {"schema": "te-tu-replay/1", "kind": "replay of per-TU times", "label": REPLAY_LABEL, "order": REPLAY_ORDER,
           "jobs": jobs, "gencode": run.get("gencode"), "fast_math": run.get("fast_math"), "trees": out}
    if len(trees) == 2:
        a, b = (out[t] for t in trees)
        doc["change_pct"] = {"from": trees[0], "to": trees[1],
                             "replayed_wall": _pct(a["replayed_wall_s"], b["replayed_wall_s"]),
                             "cpu": _pct(a["cpu_s"], b["cpu_s"])}
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"REPLAY: {REPLAY_LABEL}.\nSteps in {REPLAY_ORDER}; -j {jobs}, "
          f"durations from {args.dir / 'results.jsonl'}.")
    for t, r in out.items():
        of = f" of {r['database_entries']}" if r["database_entries"] is not None else ""
        c = r["critical_step"] or {"name": "-", "elapsed_s": 0.0, "start_s": 0.0}
        print(f"{t}: {r['tus']}{of} compiles, replayed wall {r['replayed_wall_s']:.1f} s, CPU {r['cpu_s']:.1f} s, "
              f"critical step {c['name']} {c['elapsed_s']:.1f} s (starts at {c['start_s']:.1f} s); "
              f"lower bounds {r['bounds']['critical_path_s']:.1f} s (longest step), "
              f"{r['bounds']['work_s']:.1f} s (CPU / -j)")
        if r["times_taken_at_jobs"] not in (None, jobs):
            print(f"  NOTE: {t}'s times were taken {r['times_taken_at_jobs']} at a time, replayed at -j {jobs}")
    if "change_pct" in doc:
        ch = doc["change_pct"]
        print(f"change {ch['from']} -> {ch['to']}: replayed wall {ch['replayed_wall']:+.1f}%, CPU {ch['cpu']:+.1f}% "
              f"(replay of per-TU times, no link step, no configure)")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep", help="make the generated string headers of configured builds")
    p.add_argument("builds", nargs="+", type=Path)
    p = sub.add_parser("run", help="compile each TU of each tree, N at a time")
    p.add_argument("--tree", action="append", required=True, help="NAME=BUILD_DIR (repeatable; last one = migrated)")
    p.add_argument("--tus", action="append", help=f"TU globs under {COMMON}, any suffix (default "
                   f"{', '.join(DEFAULT_TUS)}; '*': every compile of the library, .cu and host-only .cpp/.cc)")
    p.add_argument("--all", action="store_true", help="every entry of compile_commands.json (= --tus '*')")
    p.add_argument("--fast-math", action="append", help=f"TUs given --use_fast_math (default {DEFAULT_FAST_MATH[0]})")
    p.add_argument("--gencode", action="append", help=f"a -gencode value (repeatable; default {DEFAULT_GENCODE})")
    p.add_argument("--keep-archs", action="store_true", help="keep each command's arch flags as configured")
    p.add_argument("-j", "--jobs", type=int, default=16)
    p.add_argument("--order", type=Path, help="results.jsonl or report JSON of an earlier run: longest first")
    p.add_argument("--resume", action="store_true", help="skip TUs that already compiled in --out")
    p.add_argument("--commit", default="", help="codemod commit to record in run.json (the device copy has no .git)")
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("report", help="JSON + markdown tables from a run folder")
    p.add_argument("dir", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument("--md", type=Path)
    p = sub.add_parser("replay", help="the build ninja -j N would make of one tree's per-TU times (a replay, "
                       "not a measured build), or of two and the change")
    p.add_argument("dir", type=Path)
    p.add_argument("--tree", action="append", required=True, help="NAME of a tree in DIR (once or twice: A then B)")
    p.add_argument("-j", "--jobs", type=int, help="ninja's -j (default: the -j the times were taken at)")
    p.add_argument("--json", type=Path)
    p.add_argument("--ninja-log-dir", type=Path, help="keep the synthetic .ninja_log of each tree here "
                   "(`codemod impact LOG --ninja-jobs N` reads it)")
    args = ap.parse_args(argv)
    if args.cmd == "replay" and (len(set(args.tree)) > 2 or (args.jobs is not None and args.jobs < 1)):
        ap.error("replay takes one or two --tree and -j >= 1")
    return {"prep": cmd_prep, "run": cmd_run, "report": cmd_report, "replay": cmd_replay}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
