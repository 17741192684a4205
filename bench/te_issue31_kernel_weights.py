"""Issue 31 acceptance 4, second model: the rules' what-ifs over the ORIGINAL tree weighted by fitted
device seconds per kernel instantiation instead of instantiation count, and with the host phases
shrunk by a host cost per moved instantiation. Every constant is fitted on the original's builds;
run 2 is only compared with (docs/results/te_issue31_prediction_from_original.md, "Second model").

    .venv/bin/python bench/te_issue31_kernel_weights.py [--json OUT]
    .venv/bin/python bench/te_issue31_kernel_weights.py --extract AN5_JSON PER_RULE_DIR   # kernels.json

Inputs: te_issue31_original/kernels.json (instantiations per kernel per unit, each kernel's
`#if __CUDA_ARCH__` gate, the kernels each rule moves: `codemod analyze --target` x5 over the
original tree, extracted by --extract), the original sm_90 build and the original sm_100a build.
Writes te_issue31_original/weighted/ (the fitted weights, one what-if per original build and three
retarget specs; weighted_host_whole/ the same with the host phases kept whole) and runs
bench/te_issue31_from_original.py's comparison on them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from codemod.analysis.kernel_weights import (INTERCEPT, device_seconds, fit_line, fit_weights,  # noqa: E402
                                             gate_of, gated_counts, host_kept, moved_share, target_arch)
from codemod.cli import main as codemod  # noqa: E402
from codemod.impact.predict import load  # noqa: E402
from codemod.impact.targets import _unit_prices, unit_key  # noqa: E402
from te_issue31_from_original import BASE, BUILDS, ORIG, RULES, R, compare, measured_units  # noqa: E402

SM100A = (f"{R}/te_build_issue14_sm100a/original.partial.ninja_log",
          f"{R}/te_build_issue14_sm100a/original.partial.nvcc_time.csv.gz")
KERNELS = f"{ORIG}/kernels.json"
OUT = f"{ORIG}/weighted"
OUT_HOST_WHOLE = f"{ORIG}/weighted_host_whole"   # a variant: the same device weights, host phases kept whole


def extract(analysis: str, per_rule: str) -> dict:
    """kernels.json from `codemod analyze --target` x5 over the original tree (`analysis`: counts and
    gates) and each rule's analysis with a build log (`per_rule`/an_RULE_sm90.json: its migrated
    kernels). Instantiation counts do not depend on the build log."""
    an = json.loads(Path(analysis).read_text())
    moved = {r: sorted(json.loads(Path(per_rule, f"an_{r}_sm90.json").read_text())["impact"]["migrated_kernels"])
             for r in RULES}
    return {"from": "codemod analyze TE_d0067d0/transformer_engine/common --target activation --target "
                    "scaled_activation --target fused_router --target fp4_transpose --target transpose --json F "
                    "(original tree, scripts/stage_te.sh; counts per translation unit, each kernel's gate from "
                    "body_arch_min / body_arch_range), and per rule `codemod analyze --target RULE --build-log "
                    "original.ninja_log --json F` (impact.migrated_kernels)",
            "gates": {k["id"]: gate_of(k) for k in an["kernels"] if gate_of(k)},
            "moved": moved,
            "units": {t["file"]: t["kernels"] for t in an["translation_units"] if t["kernels"]}}


def _gates(kern: dict) -> dict[str, tuple]:
    return {k: tuple(g) for k, g in kern["gates"].items()}


def device_rows(log: tuple[str, str], units: dict, gates: dict) -> list[tuple[str, str, dict, float]]:
    """(unit, target, gated counts, device s) for each target of each analysed unit the build priced."""
    rows = []
    for key, (per_target, _) in sorted(_unit_prices(load(log[0], [log[1]])).items()):
        counts = units.get(key[:-2])
        for t, ms in sorted(per_target.items()):
            if counts:
                rows.append((key[:-2], t, gated_counts(counts, gates, target_arch(t)), ms / 1000))
    return rows


def fit(kern: dict) -> dict:
    """The constants, all from the original builds: device weights at sm_90 (the sm_90 build) and at
    Blackwell (the sm_100a build, ungated kernels fixed at the sm_90 weight x the Blackwell/sm_90 ratio of
    units with no gated kernel), and the host line (the sm_90 build)."""
    units, gates = kern["units"], _gates(kern)
    r90, rbw = device_rows(BASE, units, gates), device_rows(SM100A, units, gates)
    w90 = fit_weights([(c, s) for _, _, c, s in r90])
    ungated = {u for u, c in units.items() if not any(k in gates for k in c)}
    s90 = {u: s for u, _, _, s in r90 if u in ungated}
    bw: dict[str, list[float]] = {}
    for u, _, _, s in rbw:
        if u in s90:
            bw.setdefault(u, []).append(s)
    both = sorted(set(bw) & set(s90))
    ratio = sum(sum(bw[u]) / len(bw[u]) for u in both) / sum(s90[u] for u in both)
    fixed = {k: w * ratio for k, w in w90.items() if k != INTERCEPT and k not in gates}
    wbw = fit_weights([(c, s) for _, _, c, s in rbw], fixed=fixed)
    loaded = load(BASE[0], [BASE[1]])
    host = {unit_key(n)[:-2]: inv.host_device_ms()[0] / 1000 for n, inv in loaded.nvcc.items()}
    points = [(sum(c.values()), host[u]) for u, c in sorted(units.items()) if u in host]
    a, b = fit_line(points)

    def residual(rows, w):
        return {"rows": len(rows), "measured_s": round(sum(s for *_, s in rows), 1),
                "fitted_s": round(sum(device_seconds(c, w) for _, _, c, _ in rows), 1)}

    return {"sm90": {k: round(v, 5) for k, v in sorted(w90.items())},
            "blackwell": {k: round(v, 5) for k, v in sorted(wbw.items())},
            "blackwell_over_sm90_ungated": {"ratio": round(ratio, 4), "units": both},
            "host_line": {"intercept_s": round(a, 3), "s_per_instantiation": round(b, 5), "units": len(points)},
            "fit": {"sm90": residual(r90, w90), "blackwell": residual(rbw, wbw)}}


TARGETS = ("75", "80", "89", "90", "90a", "100", "100a", "103a", "120", "120f")   # every target of the specs


def what_ifs(kern: dict, weights: dict, host_slope: float | None) -> dict[str, dict]:
    """{sm90,sm100a} -> the five rules' what-if over that build: per unit a rule touches, factor =
    (host x kept + device x static) / (host + device), host_scale = kept (1 with host_slope None), and
    static_at: per target, the modelled static seconds there over the unit's modelled seconds in this build."""
    units, gates = kern["units"], _gates(kern)
    moved = set().union(*map(set, kern["moved"].values()))
    out = {}
    for tag, log, w, arch in (("sm90", BASE, weights["sm90"], 900), ("sm100a", SM100A, weights["blackwell"], 1000)):
        loaded = load(log[0], [log[1]])
        phases = {unit_key(n)[:-2]: inv.host_device_ms() for n, inv in loaded.nvcc.items()}
        scale, host_scale, static_at, rows = {}, {}, {}, {}
        for u, counts in sorted(units.items()):
            n_moved = sum(n for k, n in counts.items() if k in moved)
            if u not in phases or not n_moved:
                continue
            host, device = (ms / 1000 for ms in phases[u])
            own = device_seconds(gated_counts(counts, gates, arch), w)
            share = moved_share(gated_counts(counts, gates, arch), w, moved)
            kept = host_kept(host, n_moved, host_slope) if host_slope is not None else 1.0
            glob = f"*/{u}.o"
            scale[glob] = round((host * kept + device * (1 - share)) / (host + device), 6)
            host_scale[glob] = round(kept, 6)
            static_at[glob] = {t: round(device_seconds(gated_counts(counts, gates, target_arch(t)), w, leave=moved)
                                        / own, 4) if own > 0 else 1.0 for t in TARGETS}
            rows[u] = {"moved_instantiations": n_moved, "moved_device_share": round(share, 4),
                       "host_kept": round(kept, 4)}
        out[tag] = {"from": f"bench/te_issue31_kernel_weights.py: weights.json over {Path(log[0]).name} and "
                            f"{KERNELS} (the five rules)",
                    "units": rows,
                    "what_if": {"model": "kernel_weights", "remove": [], "scale": scale, "host_scale": host_scale,
                                "static_at": static_at,
                                "description": f"what-if: kernel_weights of the five rules in {len(scale)} TU(s)"}}
    return out


def unfinished_static(kern: dict, weights: dict, sources: list[str]) -> dict[str, float]:
    """The Blackwell device share the five rules leave of units the sm_100a log did not finish."""
    moved = set().union(*map(set, kern["moved"].values()))
    gates = _gates(kern)
    return {u: round(1 - moved_share(gated_counts(kern["units"][u], gates, 1000), weights["blackwell"], moved), 4)
            for u in sources}


def specs(kern: dict, weights: dict, folder: str) -> dict[str, dict]:
    out = {}
    for name, (spec, _, _) in BUILDS.items():
        doc = json.loads(Path(REPO, ORIG, f"{spec}.retarget.json").read_text())
        for e in doc.get("price_from") or []:
            e["what_if"] = [f"{folder}/all.sm100a.what_if.json"]
            e["static"] = unfinished_static(kern, weights, sorted(e.get("static") or {}))
        doc["about"]["weighted"] = ("the spec of the first model with the what-if and the unfinished units' static "
                                    f"shares of {folder}/ (bench/te_issue31_kernel_weights.py)")
        out[spec] = doc
    return out


def write(folder: str, kern: dict, weights: dict, host_slope: float | None) -> None:
    Path(REPO, folder).mkdir(exist_ok=True)
    for tag, doc in what_ifs(kern, weights, host_slope).items():
        Path(REPO, folder, f"all.{tag}.what_if.json").write_text(json.dumps(doc, indent=1) + "\n")
    for spec, doc in specs(kern, weights, folder).items():
        Path(REPO, folder, f"{spec}.retarget.json").write_text(json.dumps(doc, indent=1) + "\n")


def run(folder: str, tmp: str) -> dict:
    out = {}
    for name, (spec, run, wall) in BUILDS.items():
        measured = measured_units(f"{R}/te_issue31/run2/{run}.ninja_log", f"{R}/te_issue31/run2/{run}.nvcc_time.csv.gz")
        path = f"{tmp}/{name}.json"
        args = ["impact", BASE[0], "--nvcc-time", BASE[1], "--what-if", f"{folder}/all.sm90.what_if.json",
                "--retarget", f"{folder}/{spec}.retarget.json", "--first", f"{ORIG}/run2_first.txt",
                "--ninja-jobs", "16", "--all-steps", "--json", path]
        if codemod(args + ["--top", "0", "-q"]) != 0:
            raise SystemExit(1)
        doc = compare(json.loads(Path(path).read_text()), measured, wall)
        out[name] = {"command": "codemod " + " ".join(x.replace(f"{tmp}/", "OUT/") for x in args)} | doc
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    ap.add_argument("--extract", nargs=2, metavar=("ANALYSIS_JSON", "PER_RULE_DIR"))
    a = ap.parse_args(argv)
    if a.extract:
        Path(REPO, KERNELS).write_text(json.dumps(extract(*a.extract), indent=1, sort_keys=True) + "\n")
        return 0
    kern = json.loads(Path(REPO, KERNELS).read_text())
    weights = fit(kern)
    Path(REPO, OUT).mkdir(exist_ok=True)
    Path(REPO, OUT, "weights.json").write_text(json.dumps(weights, indent=1) + "\n")
    write(OUT, kern, weights, weights["host_line"]["s_per_instantiation"])
    write(OUT_HOST_WHOLE, kern, weights, None)
    out = {"schema": "codemod-te-issue31-kernel-weights/1",
           "weights": {k: v for k, v in weights.items() if k not in ("sm90", "blackwell")}}
    with tempfile.TemporaryDirectory() as tmp:
        out["builds"] = run(OUT, tmp)
        out["variant_host_whole"] = run(OUT_HOST_WHOLE, tmp)
    text = json.dumps(out, indent=1) + "\n"
    if a.json:
        Path(a.json).write_text(text)
    for name in BUILDS:
        for label, b in (("model", out["builds"][name]), ("host whole", out["variant_host_whole"][name])):
            sys.stdout.write(f"{name:16} {label:10} predicted {b['predicted_wall_s']:7.1f} s  measured "
                             f"{b['measured_wall_s']:6.1f} s  {b['error_pct']:+6.1f}%\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
