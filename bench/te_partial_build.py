"""A paired clean build whose original side the device time cut short, priced without guessing
where a measurement exists (issue 14 acceptance 1 and its stated fallback).

    python bench/te_partial_build.py DIR --jobs 16 --label NAME [--out DIR]

DIR holds what came back from the device:
  migrated.ninja_log, migrated.nvcc_time.csv.gz   the migrated side's complete clean build
  build-migrated.json                            its `codemod parity build` record (wall, CPU, machine)
  original.partial.ninja_log                     the edges the original had finished when time ran out
  original.partial.nvcc_time.csv.gz              the nvcc --time rows it had written by then
  original.progress.txt                          "HH:MM:SS N" per poll: ninja's finished count then

Three results, kept apart in the JSON and the markdown:
1. measured: the migrated wall, and a lower bound on the original's ninja time at the last poll.
   ninja prints "[n/total]" after an edge ends, so the n-th earliest end in the log happened no
   later than the first poll showing n; that bounds ninja's start from above, and the last poll
   minus that bound is time the original had certainly spent. The wall change is bounded by it.
2. per TU, every edge: the migrated duration; the original's where it finished; where it did not,
   at least the time since ninja's latest possible start (edges recorded at start 0 began with
   ninja: -j slots were free) and the nvcc phases it had written.
3. estimated, labelled so: each unfinished edge's duration from its own finished phases (an arch
   pipeline that has not run is priced as the same TU's finished one; nvcc runs them one after
   the other with TE's `--threads 1`), a host compile not yet run priced as the migrated TU's, a
   link priced as the migrated link; an edge without a finished arch pipeline keeps its lower
   bound. The completed log is replayed with `codemod impact -j JOBS`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from codemod.impact import nvcc_time
from codemod.impact.logfile import open_log
from codemod.impact.ninja_log import is_link_output
from codemod.impact.nvcc_time import phase_kind
from codemod.impact.predict import analyse, load

PIPELINE = ("cicc", "ptxas")     # one arch's device work; nvcc runs one arch after the other


def edges(loaded) -> dict[str, tuple[int, int]]:
    """output -> (start ms, end ms) of a loaded ninja log's build (codemod.impact's reader)."""
    return {st.name: (int(st.start_ms), int(st.end_ms)) for st in loaded.steps}


def read_phases(path: Path) -> dict[str, list[dict]]:
    """TU (as nvcc named it) -> its nvcc --time rows in file order: row, phase, arch, seconds."""
    with open_log(str(path)) as fh:
        rows = nvcc_time.read_rows(fh, path.name)
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r.source, []).append({"row": r.lineno, "phase": r.phase, "arch": r.arch, "s": r.ms / 1000})
    return out


def began_with_ninja(unfinished: list[str], orig: dict[str, tuple[int, int]], phases: dict[str, list[dict]],
                     jobs: int) -> set[str]:
    """The unfinished edges that started at ninja's start. Every object is ready at once in this
    build, so -j slots all fill at once; those not accounted for by finished edges that started
    before the first edge ended are the unfinished ones whose first nvcc row was written earliest.
    Checked: each of them wrote its first row before any TU that started later did."""
    first_end = min(e for _, e in orig.values())       # no slot was free before this: the first batch
    free = jobs - sum(1 for s, _ in orig.values() if s < first_end)
    first = {o: min((r["row"] for r in phases.get(tu_of(o), [])), default=1 << 60) for o in unfinished}
    chosen = set(sorted(unfinished, key=first.get)[:max(free, 0)])
    later = [min(r["row"] for r in phases[tu_of(o)]) for o, (s, _) in orig.items()
             if s >= first_end and tu_of(o) in phases]
    for o in chosen:
        if later and first[o] > min(later):
            raise SystemExit(f"cannot tell whether {o} began with ninja: its first nvcc row comes after a later TU's")
    return chosen


def read_progress(path: Path) -> list[tuple[int, int]]:
    """(seconds of the day, finished count) per poll that showed a count."""
    polls = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        clock, count = line.split()
        h, m, s = (int(x) for x in clock.split(":"))
        if count != "-":
            polls.append((h * 3600 + m * 60 + s, int(count)))
    return polls


def elapsed_lower_bound(ends_ms: list[int], polls: list[tuple[int, int]]) -> dict:
    """ninja's latest possible start (seconds of the day) and the time surely spent at the last poll."""
    ends = sorted(ends_ms)
    latest_start = min(t - ends[n - 1] / 1000 for t, n in polls if 0 < n <= len(ends))
    last = polls[-1][0]
    return {"latest_start_s_of_day": round(latest_start, 3), "last_poll_s_of_day": last,
            "finished_at_last_poll": polls[-1][1], "elapsed_lower_bound_s": round(last - latest_start, 1)}


def tu_of(output: str) -> str:
    """CMakeFiles/<target>.dir/<src>.o -> <src> (nvcc's source name once the tree prefix is gone)."""
    if ".dir/" in output and output.endswith(".o"):
        return output.split(".dir/", 1)[1][:-2]
    return output


def _target(arch: str) -> str:
    """compute_100a / sm_100a -> 100a: the target a phase ran for."""
    return arch.split("_", 1)[1]


def pipelines(rows: list[dict]) -> dict[str, dict]:
    """target -> its device pipeline so far: cicc + ptxas seconds, cicc's share, whether ptxas ended."""
    out: dict[str, dict] = {}
    for r in rows:
        if not r["arch"].startswith(("compute_", "sm_")):
            continue
        p = out.setdefault(_target(r["arch"]), {"s": 0.0, "cicc_s": 0.0, "finished": False})
        kind = phase_kind(r["phase"])
        if kind in PIPELINE:
            p["s"] += r["s"]
            p["cicc_s"] += r["s"] if kind == "cicc" else 0.0
            p["finished"] |= kind == "ptxas"
    return out


def host_compile_s(rows: list[dict]) -> float:
    return sum(r["s"] for r in rows if phase_kind(r["phase"]) == "host_compile")


def estimate(rows: list[dict], migrated_host_s: float | None) -> tuple[float, str]:
    """Seconds for an unfinished TU from its own finished phases; and how."""
    done = sum(r["s"] for r in rows)
    pipes = pipelines(rows)
    finished = [p["s"] for p in pipes.values() if p["finished"]]
    if not finished:
        return done, "lower bound only: no arch pipeline had finished"
    mean = sum(finished) / len(finished)
    missing = sorted(a for a, p in pipes.items() if not p["finished"])
    rest = sum(max(mean - pipes[a]["cicc_s"], 0.0) for a in missing)   # a cicc already done is not missing
    host = 0.0 if host_compile_s(rows) else (migrated_host_s or 0.0)
    how = (f"{done:.1f} s of phases done; {len(missing)} arch pipeline(s) not finished "
           f"({', '.join(missing) or 'none'}) priced as the finished one ({mean:.1f} s)"
           + (f"; host compile priced as the migrated TU's ({host:.1f} s)" if host else ""))
    return done + rest + host, how


def pipeline_ratios(phases: dict[str, list[dict]], min_s: float = 100.0) -> dict | None:
    """How long a TU's later arch pipeline (cicc + ptxas) ran against its first, over the finished
    TUs with at least min_s of first-pipeline work: the evidence behind pricing a missing pipeline
    as the finished one."""
    ratios = []
    for rows in phases.values():
        done = [p["s"] for _, p in sorted(pipelines(rows).items()) if p["finished"]]
        if len(done) >= 2 and done[0] >= min_s:
            ratios += [x / done[0] for x in done[1:]]
    if not ratios:
        return None
    return {"tus": len(ratios), "min": round(min(ratios), 3), "median": round(statistics.median(ratios), 3),
            "max": round(max(ratios), 3), "min_first_pipeline_s": min_s}


def replay(loaded, jobs: int) -> dict:
    """`codemod impact -j JOBS`'s replay of a loaded log: wall and CPU."""
    doc = analyse(loaded, jobs=jobs, max_steps=1)
    return {"replayed_wall_s": doc["replayed_wall_s"], "cpu_s": doc["cpu_s_before"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--jobs", type=int, required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    d, out = a.dir, a.out or a.dir.parent
    mig_loaded = load(str(d / "migrated.ninja_log"))
    mig, orig = edges(mig_loaded), edges(load(str(d / "original.partial.ninja_log")))
    record = json.loads((d / "build-migrated.json").read_text())
    mph = read_phases(d / "migrated.nvcc_time.csv.gz")
    oph = read_phases(d / "original.partial.nvcc_time.csv.gz")
    bound = elapsed_lower_bound([e for _, e in orig.values()], read_progress(d / "original.progress.txt"))
    lb = bound["elapsed_lower_bound_s"]
    mig_wall = record["build"]["wall_s"]

    def secs(edges: dict, o: str) -> float:
        return (edges[o][1] - edges[o][0]) / 1000

    left = [o for o in mig if o not in orig and (tu_of(o) in oph or is_link_output(o))]
    # unfinished first, then the original's longest, then the files only the migrated tree has
    outputs = sorted(set(mig) | set(orig), key=lambda o: (1, -secs(orig, o)) if o in orig else
                     (0 if o in left else 2, is_link_output(o), -secs(mig, o)))
    at_zero = began_with_ninja(left, orig, oph, a.jobs)
    last_end = max(e for _, e in orig.values())
    rows, completed = [], dict(orig)
    for o in outputs:
        tu = tu_of(o)
        row = {"edge": o, "migrated_s": round(secs(mig, o), 1) if o in mig else None}
        if o in orig:
            row["original_s"] = round(secs(orig, o), 1)
        elif o in left:
            done = oph.get(tu, [])
            if is_link_output(o):
                est, how = secs(mig, o), "link priced as the migrated link"
            else:
                est, how = estimate(done, host_compile_s(mph.get(tu, [])) or None)
            least = lb if o in at_zero else round(sum(r["s"] for r in done), 1)
            row.update({"original_finished": False, "began_with_ninja": o in at_zero,
                        "original_phases_done": [{k: r[k] for k in ("phase", "arch", "s")} for r in done],
                        "original_at_least_s": least, "original_estimate_s": round(max(est, least), 1),
                        "estimate_how": how})
            start_ms = 0 if o in at_zero else last_end
            completed[o] = (start_ms, start_ms + int(row["original_estimate_s"] * 1000))
        else:
            row["original_s"] = None   # a file only the migrated tree has (generated kernels, stubs)
        rows.append(row)
    for o in filter(is_link_output, left):          # a link starts when the last object is done
        start_ms = max(e for k, (_, e) in completed.items() if not is_link_output(k))
        completed[o] = (start_ms, start_ms + completed[o][1] - completed[o][0])
    unfinished = [r for r in rows if r.get("original_finished") is False]
    log_text = "# ninja log v7\n" + "".join(
        f"{s}\t{e}\t0\t{o}\t0\n" for o, (s, e) in sorted(completed.items(), key=lambda kv: (kv[1][1], kv[1][0])))
    with tempfile.TemporaryDirectory() as tmp:    # codemod impact reads a log from a path
        (Path(tmp) / "ninja_log").write_text(log_text)
        est = replay(load(str(Path(tmp) / "ninja_log")), a.jobs)
    mig_replay = replay(mig_loaded, a.jobs)
    env = record["environment"]
    doc = {"schema": "codemod-partial-build/1", "label": a.label, "jobs": a.jobs, "environment": env,
           "migrated": {"wall_s": mig_wall, "cpu_s": record["build"]["cpu_s"], "configure_wall_s":
                        record["configure"]["wall_s"], "replayed_wall_s": mig_replay["replayed_wall_s"]},
           "original_measured": {**bound, "edges_finished": len(orig), "unfinished_began_with_ninja": sorted(at_zero),
                                 "unfinished": [r["edge"] for r in unfinished]},
           "wall_change_measured_at_most_pct": round(100 * (mig_wall / lb - 1), 1),
           "original_estimated": {"replayed_wall_s": est["replayed_wall_s"], "cpu_s": est["cpu_s"],
                                  "later_to_first_pipeline": pipeline_ratios(oph),
                                  "wall_change_pct": round(100 * (mig_wall / est["replayed_wall_s"] - 1), 1)},
           "per_tu": rows}
    (out / f"{a.label}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{a.label}.md").write_text(markdown(doc))
    print(f"migrated {mig_wall} s; original >= {lb} s measured (change <= "
          f"{doc['wall_change_measured_at_most_pct']}%), {est['replayed_wall_s']} s estimated+replayed "
          f"({doc['original_estimated']['wall_change_pct']}%)")
    return 0


def markdown(doc: dict) -> str:
    env, m, o, e = doc["environment"], doc["migrated"], doc["original_measured"], doc["original_estimated"]
    lines = [f"## Generated table ({doc['label']})", "",
             f"{env['gpu']}; {env['nvcc']}; {env['cpus']} CPUs; migrated build started {env['date']}; "
             f"codemod {env['commit']}; -j {doc['jobs']}.", "",
             "| | original | migrated | change |", "|---|---:|---:|---:|",
             f"| wall, measured | ≥ {o['elapsed_lower_bound_s']:,.1f} s (not finished: {len(o['unfinished'])} edges "
             f"left, {o['edges_finished']} done) | {m['wall_s']:,.1f} s | **≤ {doc['wall_change_measured_at_most_pct']}%** |",
             f"| wall, estimated and replayed (`codemod impact -j {doc['jobs']}`) | {e['replayed_wall_s']:,.1f} s | "
             f"{m['replayed_wall_s']:,.1f} s (replay of the measured log) | {e['wall_change_pct']}% (estimate) |",
             "", "Unfinished original edges (a later arch pipeline against the first, finished TUs: "
             + (lambda r: f"{r['min']}–{r['max']}, median {r['median']} over {r['tus']}"
                if r else "none to compare")(e["later_to_first_pipeline"]) + "):", "",
             "| edge | at least s | estimate s | how | migrated s |", "|---|---:|---:|---|---:|"]
    for r in doc["per_tu"]:
        if r.get("original_finished") is False:
            lines.append(f"| `{tu_of(r['edge'])}` | {r['original_at_least_s']:,.1f} | {r['original_estimate_s']:,.1f} | "
                         f"{r['estimate_how']} | {r['migrated_s'] if r['migrated_s'] is not None else '—'} |")
    lines += ["", "Every edge (s; ninja log durations under -j load):", "", "| edge | original | migrated |",
              "|---|---:|---:|"]
    for r in doc["per_tu"]:
        orig = (f"{r['original_s']:,.1f}" if r.get("original_s") is not None else
                "not started" if r.get("original_finished") is False and not r["original_phases_done"]
                and not r["began_with_ninja"] else
                f"≥ {r['original_at_least_s']:,.1f} (unfinished)" if r.get("original_finished") is False else "—")
        lines.append(f"| `{tu_of(r['edge'])}` | {orig} | {r['migrated_s'] if r['migrated_s'] is not None else '—'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
