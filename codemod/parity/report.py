"""Parity result (codemod-parity/1 JSON) -> a short markdown summary."""

from __future__ import annotations

import statistics


def _ms(v) -> str:
    return "–" if v is None else f"{v:.1f}"


def _rejections(combinations: list[dict]) -> list[str]:
    """Each message both builds rejected a case with, and the entry points it came from."""
    by_message: dict[str, dict[str, int]] = {}
    for c in combinations:
        for message in c.get("rejections") or []:
            entries = by_message.setdefault(message, {})
            entries[c["entry"]] = entries.get(c["entry"], 0) + 1
    if not by_message:
        return []
    lines = ["", "Rejected by both builds (message; entry points, combinations):", ""]
    for message, entries in sorted(by_message.items(), key=lambda kv: (-sum(kv[1].values()), kv[0])):
        lines.append(f"- `{message}`: " + ", ".join(f"`{e}` ({n})" for e, n in sorted(entries.items())))
    return lines


def _already_compiled(bench: list[dict]) -> str:
    """NOTE: no NVRTC compile finishes in under 1 ms, so a migrated first call that fast found its
    variant compiled by an earlier call of the process (another entry point, same kernel)."""
    firsts = [b["first_ms"]["migrated"] for b in bench if b.get("first_ms", {}).get("migrated") is not None]
    fast = [v for v in firsts[1:] if v < 1.0]
    if not fast:
        return ""
    rest = [v for v in firsts[1:] if v >= 1.0]
    return (f" {len(fast)} of the other {len(firsts) - 1} first calls took under 1 ms: their variant "
            f"was already compiled by an earlier call; over the {len(rest)} that compiled, median "
            f"{_ms(statistics.median(rest) if rest else None)} ms, max {_ms(max(rest) if rest else None)} ms, "
            f"{sum(v <= 300 for v in rest)} within 300 ms.")


def render_markdown(r: dict) -> str:
    env, p, bs = r["environment"], r["parity"], r["bench_summary"]
    lines = [
        f"# Parity: {r['library']}, rule `{r['rule']}`{' (' + r['label'] + ')' if r.get('label') else ''}",
        "",
        f"codemod commit `{env.get('commit') or '?'}`; GPU {env.get('gpu') or '?'}; {env.get('nvcc')}; "
        f"{env.get('cpus')} CPUs; {env.get('date')}; arch {r['arch']}; seed {r['seed']}.",
        "",
        "## Outputs, original vs migrated (byte for byte)",
        "",
        f"**{p['equal']} of {p['ran']} cases byte-equal** "
        f"({'all equal' if p['all_equal'] else str(r['mismatch_count']) + ' mismatches'}); "
        f"{p['bytes_compared']:,} bytes compared (outputs, amax, scale_inv, block scales, dbias, and "
        f"{256} poisoned guard bytes past every buffer); {p['rejected_by_both']} cases rejected by "
        f"both builds ({r.get('message_difference_count', 0)} with differently worded messages: the "
        f"migrated layer names the variant). Pending launch errors cleared between cases: "
        f"{'yes' if p.get('clear_pending_errors') else 'no'}. Shapes (R, C): "
        + ", ".join(f"{a}x{b}" for a, b in p["shapes"]) + "; values: random and edge "
        "(±0, NaN, ±Inf, denormals, the dtype's largest finite, FP8-overflowing).",
        "",
        "| entry point | combinations run | cases run | byte-equal | rejected (both) |",
        "|---|---:|---:|---:|---:|",
    ]
    # One row per entry point: the variants of a profile's calls spec ("function/variant") summed.
    per_entry: dict[str, list[int]] = {}
    variants: dict[str, set[str]] = {}
    for c in r["combinations"]:
        name, _, variant = c["entry"].partition("/")
        variants.setdefault(name, set()).add(variant)
        e = per_entry.setdefault(name, [0, 0, 0, 0])
        e[0] += 1 if c["ran"] else 0
        e[1] += c["ran"]
        e[2] += c["equal"]
        e[3] += c["rejected"]
    for name, (combos, ran, equal, rej) in sorted(per_entry.items()):
        n = len(variants[name] - {""})
        lines.append(f"| `{name}`{f' ({n} variants)' if n else ''} | {combos} | {ran} | {equal} | {rej} |")
    lines += _rejections(r["combinations"])
    if r["mismatches"]:
        lines += ["", "First mismatches:", ""]
        lines += [f"- `{m['case']}` {m['what']}: {m['detail']}" for m in r["mismatches"][:10]]
    if r.get("not_called"):
        lines += ["", "Reaching migrated kernels but not called by the driver: "
                  + "; ".join(f"`{e['name']}` ({e['why']})" for e in r["not_called"]) + "."]
    if r.get("compile_verified_only"):
        lines += ["", "Compile-verified only (needs sm_100, not run here): "
                  + "; ".join(r["compile_verified_only"]) + "."]
    lines += ["", "## Runtime cost of the migration", ""]
    if not r.get("bench") and not r.get("step_first_use_ms"):   # `parity run --no-timings`
        return "\n".join(lines + ["Not measured in this run (`parity run --no-timings`): outputs only."]
                         + _builds(r)) + "\n"
    lines += [
        f"First call of an (entry point, input, format) at {bs['shape'][0]}x{bs['shape'][1]}, each "
        f"build in a fresh process, host wall time to completion (the migrated build compiles its "
        f"variant(s) with NVRTC here): migrated median **{_ms(bs['first_use_ms_migrated_median'])} ms**, "
        f"max {_ms(bs['first_use_ms_migrated_max'])} ms; original median "
        f"{_ms(bs['first_use_ms_original_median'])} ms. The first call in a process "
        f"(runtime and NVRTC start-up included) is excluded: "
        f"{_ms((bs['first_call_ms_first_in_process'] or {}).get('migrated'))} ms migrated, "
        f"{_ms((bs['first_call_ms_first_in_process'] or {}).get('original'))} ms original."
        + _already_compiled(r.get("bench", [])),
        "",
    ]
    if r.get("step_first_use_ms"):
        s = r["step_first_use_ms"]
        lines += [f"A forward+backward step ({len(r['step']['migrated'])} calls: "
                  + ", ".join(f"`{x['entry']}` {x['input']}→{x['format']}" for x in r["step"]["migrated"])
                  + f") in a fresh process: first-use total **{_ms(s['migrated'])} ms** migrated vs "
                  f"{_ms(s['original'])} ms original.", ""]
    lines += [
        (f"Warm time per call (CUDA events around the C API call, median of {bs['reps']}): migrated / "
        f"original median ratio **{bs['warm_ratio_median']:.3f}** (min {bs['warm_ratio_min']:.3f}, "
        f"max {bs['warm_ratio_max']:.3f}) over {len(r.get('bench', []))} combinations."
        if bs["warm_ratio_median"] else "No warm timings."),
        "",
        "| entry point | input | format | first call ms (orig / migr) | warm ms (orig / migr) | ratio |",
        "|---|---|---|---:|---:|---:|",
    ]
    for b in r.get("bench", []):
        lines.append(f"| `{b['entry']}` | {b['input']} | {b['format']} | {b['first_ms']['original']:.1f} / "
                     f"{b['first_ms']['migrated']:.1f} | {b['warm_median_ms']['original']:.4f} / "
                     f"{b['warm_median_ms']['migrated']:.4f} | {b['ratio']:.3f} |")
    return "\n".join(lines + _builds(r)) + "\n"


def _builds(r: dict) -> list[str]:
    builds = dict(sorted((r.get("builds") or {}).items(), key=lambda kv: (kv[0] != "original", kv[0])))
    if builds and all("build" in b for b in builds.values()):      # `parity build` records
        return (["", "| build (clean, `parity build`) | wall s | CPU s | configure s |", "|---|---:|---:|---:|"]
                + [f"| {s} | {b['build']['wall_s']} | {b['build']['cpu_s']} | "
                   f"{b.get('configure', {}).get('wall_s', '–')} |" for s, b in builds.items()])
    if builds:
        return ["", "Builds (both at once on the same machine, for the harness only): "
                + ", ".join(f"{s} {b['seconds']} s" for s, b in builds.items()) + "."]
    return []
