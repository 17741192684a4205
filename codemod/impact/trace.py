"""Chrome/Perfetto trace (JSON object format) of an impact document: one process per schedule
(measured, replayed, predicted), one thread per job lane, nvcc phases nested under their step.

NOTE: nvcc --time has no timestamps, so phases are laid out back to back in nvcc's order from the
step's start and shrunk to fit it; their args carry "approximate": true.
"""

from __future__ import annotations

from .lanes import assign_lanes
from .nvcc_time import KINDS

_SCHEDULES = (("measured", 1), ("replayed", 2), ("predicted", 3))


def _window(row: dict, which: str) -> tuple[float, float]:
    if which == "measured":
        return row["start_s"], row["end_s"]
    return row[which]["start_s"], row[which]["end_s"]


def build_trace(doc: dict) -> dict:
    events: list[dict] = []
    rows = sorted(doc["steps"], key=lambda r: (r["start_s"], r["name"]))
    for which, pid in _SCHEDULES:
        events.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": f"{which} build"}})
        events.append({"ph": "M", "pid": pid, "tid": 0, "name": "process_sort_index", "args": {"sort_index": pid}})
        live = [r for r in rows if _window(r, which)[1] > _window(r, which)[0]]
        lanes = assign_lanes([_window(r, which) for r in live])
        for lane in sorted(set(lanes)):
            events.append({"ph": "M", "pid": pid, "tid": lane + 1, "name": "thread_name", "args": {"name": f"job {lane + 1}"}})
        for r, lane in zip(live, lanes):
            start, end = _window(r, which)
            ts, dur = round(start * 1e6), round((end - start) * 1e6)
            args = {"elapsed_s": round(end - start, 3), "action": r["action"]}
            if r["nvcc"]:
                args.update(host_s=r["host_s"], device_s=r["device_s"])
            events.append({"ph": "X", "pid": pid, "tid": lane + 1, "name": r["name"], "cat": "step",
                           "ts": ts, "dur": dur, "args": args})
            events.extend(_phases(r, pid, lane + 1, ts, dur))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": doc["tool"], "schema_version": doc["schema_version"],
            "measured_wall_s": doc["measured_wall_s"], "replayed_wall_s": doc["replayed_wall_s"],
            "predicted_wall_s": doc["predicted_wall_s"],
        },
    }


def _phases(row: dict, pid: int, tid: int, ts: int, dur: int) -> list[dict]:
    phases = [(k, row["phases"][k]) for k in KINDS if row["phases"].get(k, 0) > 0]
    total = sum(v for _, v in phases)
    if not phases or dur <= 0 or total <= 0:
        return []
    fit = min(1.0, dur / (total * 1e6))
    out, t = [], ts
    for kind, secs in phases:
        d = round(secs * 1e6 * fit)
        out.append({"ph": "X", "pid": pid, "tid": tid, "name": kind, "cat": "nvcc", "ts": t, "dur": d,
                    "args": {"seconds": secs, "approximate": True}})
        t += d
    return out
