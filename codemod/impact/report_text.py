"""Terminal report of an impact document (and of an A/B comparison). Reads only the JSON document."""

from __future__ import annotations


def _short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else "..." + name[-(width - 3):]


def render(doc: dict, top: int = 20) -> str:
    out = []
    o = doc["options"]
    m, rp, pr = (doc["summary"][k] for k in ("measured", "replayed", "predicted"))
    out.append(f"build: {doc['inputs']['log']} (ninja log v{doc['inputs']['log_version']}, "
               f"build {doc['inputs']['build_index'] + 1} of {doc['inputs']['builds_in_log']}, graph from {doc['inputs']['graph_source']})")
    out.append(f"replay: -j {o['jobs']} ({o['jobs_source']}), policy ninja {o['policy']} ({o['policy_source']})"
               + (f", {o['cores']} cores, contention alpha {o['contention_alpha']}" if o["cores"] else ""))
    out.append("")
    out.append(f"{'':10} {'wall s':>10} {'CPU s':>10} {'parallel':>9} {'util':>6} {'steps':>7}")
    for label, s in (("measured", m), ("replayed", rp), ("predicted", pr)):
        out.append(f"{label:10} {s['wall_s']:10.1f} {s['cpu_s']:10.1f} {s['effective_parallelism']:8.2f}x "
                   f"{100 * s['utilisation']:5.1f}% {s['steps']:7d}")
    out.append(f"replay error {doc['replay_error_pct']:+.2f}% of the measured wall")
    nv = doc["nvcc"]
    if nv["cuda_steps"]:
        tot = nv["host_s"] + nv["device_s"]
        out.append(f"nvcc phases for {nv['cuda_steps']} CUDA steps: host {nv['host_s']:.1f} s "
                   f"({100 * nv['host_s'] / tot:.0f}%), device {nv['device_s']:.1f} s ({100 * nv['device_s'] / tot:.0f}%)")
    out.append("")
    lim = doc.get("steps_limited")
    total = lim["total"] if lim else len(doc["steps"])
    out.append(f"top {min(top, len(doc['steps']))} of {total} steps by elapsed time"
               + (f" (the JSON lists the {lim['listed']} longest; --all-steps for all)" if lim else ""))
    out.append(f"{'elapsed':>9} {'start':>8} {'end':>8} {'weighted':>9} {'host':>8} {'device':>8}  {'what-if':8} step")
    for r in doc["steps"][:top]:
        act = {"keep": "", "remove": "removed", "scale": f"x{r['factor']:g}"}[r["action"]]
        out.append(f"{r['elapsed_s']:9.1f} {r['start_s']:8.1f} {r['end_s']:8.1f} {r['weighted_s']:9.1f} "
                   f"{r['host_s']:8.1f} {r['device_s']:8.1f}  {act:8} {_short(r['name'])}")
    out.append("")
    for label in ("measured", "predicted"):
        t = doc["concurrency"][label]["tail"]
        out.append(f"concurrency ({label}): {t['full_concurrency']} jobs until {t['full_until_s']:.1f} s, "
                   f"then a {t['tail_s']:.1f} s tail doing {t['tail_job_s']:.1f} job-s; below half for {t['below_half_s']:.1f} s")
    for label in ("replayed", "predicted"):
        c = doc["critical"][label]["step"]
        if c:
            out.append(f"critical step ({'before' if label == 'replayed' else 'after'}): {_short(c['name'], 70)} "
                       f"{c['elapsed_s']:.1f} s ({c['start_s']:.1f}-{c['end_s']:.1f} s)")
    b, a = doc["bounds"]["before"], doc["bounds"]["after"]
    out.append(f"lower bounds before: path {b['critical_path_s']:.1f} s, work/j {b['work_s']:.1f} s; "
               f"after: path {a['critical_path_s']:.1f} s, work/j {a['work_s']:.1f} s")
    for w in doc["warnings"]:
        out.append(f"warning: {w}")
    out.append("")
    if lim:
        removed, scaled = lim["removed"], lim["scaled"]
    else:
        removed = sum(1 for r in doc["steps"] if r["action"] == "remove")
        scaled = sum(1 for r in doc["steps"] if r["action"] == "scale")
    out.append(f"predicted wall {doc['predicted_wall_s']:.1f} s vs replayed {doc['replayed_wall_s']:.1f} s "
               f"({doc['predicted_delta_pct']:+.1f}%, replay error {doc['replay_error_pct']:+.2f}%); "
               f"CPU {doc['cpu_s_before']:.1f} -> {doc['cpu_s_after']:.1f} s; {removed} steps removed, {scaled} scaled")
    return "\n".join(out) + "\n"


def render_compare(doc: dict, top: int = 20) -> str:
    a, b = doc["a"], doc["b"]
    out = [
        f"A: {a['log']}: wall {a['wall_s']:.1f} s, CPU {a['cpu_s']:.1f} s, {a['steps']} steps",
        f"B: {b['log']}: wall {b['wall_s']:.1f} s, CPU {b['cpu_s']:.1f} s, {b['steps']} steps",
        "",
        f"{'A s':>9} {'B s':>9} {'B/A':>7}  step",
    ]
    for r in doc["steps"][:top]:
        ratio = f"{r['ratio']:7.2f}" if r["ratio"] is not None else "      -"
        out.append(f"{r['a_s']:9.1f} {r['b_s']:9.1f} {ratio}  {_short(r['name'])}" + ("  (command changed)" if r["hash_changed"] else ""))
    out.append("")
    if doc["only_in_a"] or doc["only_in_b"]:
        out.append(f"{len(doc['only_in_a'])} steps only in A, {len(doc['only_in_b'])} only in B")
    out.append(f"B/A: wall x{doc['wall_ratio']}, CPU x{doc['cpu_ratio']}, per-step geometric mean x{doc['geomean_ratio']} "
               f"over {len(doc['steps'])} common steps")
    return "\n".join(out) + "\n"
