"""Issue 31 acceptance 4: the migrated builds predicted from the ORIGINAL tree's per-TU data, through
`codemod impact --what-if ... --retarget SPEC --first SOURCES`, against run 2's measured builds
(docs/results/te_issue31_prediction_from_original.md). A model checked against builds, not a
timing benchmark.

    .venv/bin/python bench/te_issue31_from_original.py [--json OUT]

Inputs (all committed): the original sm_90 build (te_build/run7_issue13/original, its host phases and
sm_90 targets), the original sm_100a + fast math build (te_build_issue14_sm100a/original.partial, its
Blackwell targets), the five rules' what-ifs of `codemod analyze --target RULE` over the original
tree with each of those logs (te_issue31_original/what_if/), the retarget specs
(te_issue31_original/*.retarget.json) and run 2's source order (te_issue31_original/run2_first.txt).
Measured: te_issue31/run2/{six,sm100a,sm90} (only compared with, never read by the model).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from codemod.cli import main as codemod  # noqa: E402
from codemod.impact.predict import load  # noqa: E402
from codemod.impact.targets import unit_key  # noqa: E402

R = "docs/results"
BASE = (f"{R}/te_build/run7_issue13/original.ninja_log", f"{R}/te_build/run7_issue13/original.nvcc_time.csv.gz")
ORIG = f"{R}/te_issue31_original"
RULES = ("activation", "scaled_activation", "fused_router", "fp4_transpose", "transpose")
BUILDS = {  # configuration -> (spec, run 2's measured log and nvcc rows, measured wall of the ninja command)
    "six_arch": ("six_arch", "six", 334.0),
    "sm100a_fastmath": ("sm100a_fastmath", "sm100a", 197.0),
    "sm90": ("sm90", "sm90", 200.4),
}
# The units whose instantiation-share what-if at sm_90 counts the kernels gated above sm_90 as empty
# (analysis/pricing.py `_empty_kernels`): where the error sits (the write-up's diagnosis).
GROUPED = ("activation/gelu_grouped.cu", "activation/relu_grouped.cu", "activation/swiglu_grouped.cu",
           "cast/cast_grouped.cu", "activation/gelu_grouped_dbias.cu", "activation/relu_grouped_dbias.cu",
           "activation/swiglu_grouped_dbias.cu", "cast/cast_grouped_dbias.cu")


def command(spec: str, out: str, what_ifs: str = "what_if") -> list[str]:
    args = ["impact", BASE[0], "--nvcc-time", BASE[1]]
    for rule in RULES:
        args += ["--what-if", f"{ORIG}/{what_ifs}/{rule}.sm90.what_if.json"]
    return args + ["--retarget", f"{ORIG}/{spec}.retarget.json", "--first", f"{ORIG}/run2_first.txt",
                   "--ninja-jobs", "16", "--all-steps", "--json", out]


def measured_units(log: str, csv: str) -> dict[str, dict]:
    loaded = load(log, [csv])
    out = {}
    for k, name in enumerate(loaded.steps.name):
        inv = loaded.nvcc.get(name)
        host, device = inv.host_device_ms() if inv is not None else (0.0, 0.0)
        out[unit_key(name)] = {"elapsed_s": round((loaded.steps.end_ms[k] - loaded.steps.start_ms[k]) / 1000, 1),
                               "host_s": round(host / 1000, 1), "device_s": round(device / 1000, 1)}
    return out


def compare(doc: dict, measured: dict[str, dict], wall: float) -> dict:
    units = {unit_key(u["name"]): u for u in doc["retarget"]["units"]}
    rows = []
    for s in doc["steps"]:
        key = unit_key(s["name"])
        m = measured.get(key)
        if m is None:
            continue
        u = units.get(key, {})  # nvcc phases of a CUDA step: host kept, device re-priced
        rows.append({"unit": key, "predicted_s": round(s["predicted"]["elapsed_s"], 1), "measured_s": m["elapsed_s"],
                     "error_s": round(s["predicted"]["elapsed_s"] - m["elapsed_s"], 1),
                     "predicted_host_s": round(u.get("new_host_s", u.get("host_s", 0.0)), 1),
                     "predicted_device_s": round(u.get("new_device_s", 0.0), 1),
                     "measured_host_s": m["host_s"], "measured_device_s": m["device_s"]})
    rows.sort(key=lambda r: (-abs(r["error_s"]), r["unit"]))
    grouped = [r for r in rows if r["unit"][:-2] in GROUPED]
    only_new = sorted(set(measured) - {r["unit"] for r in rows})
    crit = doc["critical"]["predicted"]["step"]
    return {
        "predicted_wall_s": doc["predicted_wall_s"], "measured_wall_s": wall,
        "error_pct": round(100 * (doc["predicted_wall_s"] - wall) / wall, 1),
        "predicted_cpu_s": doc["cpu_s_after"],
        "measured_cpu_s": round(sum(m["elapsed_s"] for m in measured.values()), 1),
        "predicted_critical_step": unit_key(crit["name"]), "predicted_critical_step_s": crit["elapsed_s"],
        "cpu_error_s_grouped_units": round(sum(r["error_s"] for r in grouped), 1),
        "cpu_error_s_other_units": round(sum(r["error_s"] for r in rows if r not in grouped), 1),
        "grouped_units_phases_s": {k: round(sum(r[k] for r in grouped), 1) for k in (
            "predicted_host_s", "measured_host_s", "predicted_device_s", "measured_device_s")},
        "steps_only_in_the_migrated_build": {k: measured[k]["elapsed_s"] for k in only_new},
        "largest_errors": rows[:15],
    }


def machine_speed() -> dict:
    """Units no rule or device-pass entry touches, at sm_90 on both machines: run 2's time over the
    original build's (a diagnosis; the model does not use it)."""
    base = measured_units(*BASE)
    run2 = measured_units(f"{R}/te_issue31/run2/sm90.ninja_log", f"{R}/te_issue31/run2/sm90.nvcc_time.csv.gz")
    units = sorted(k for k in base if k.startswith(("hadamard_transform/", "multi_tensor/", "comm_gemm_overlap/"))
                   or k in ("fused_attn/utils.cu.o", "gemm/cutlass_grouped_gemm.cu.o"))
    a, b = sum(base[u]["elapsed_s"] for u in units), sum(run2[u]["elapsed_s"] for u in units)
    return {"units": len(units), "original_build_s": round(a, 1), "run2_sm90_s": round(b, 1), "ratio": round(b / a, 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    out = {"schema": "codemod-te-issue31-prediction-from-original/1", "codemod": commit,
           "kind": "a model of the migrated builds from the original tree's per-TU data, checked against run 2",
           "inputs": {
               "original_sm90": list(BASE) + ["TE d0067d0 original, sm_90, ninja -j16, nvidia-h200 (16 cores), "
                                              "2026-12-01 (te_build_issue13_paired.md): host phases, sm_90/90a "
                                              "targets, the schedule"],
               "original_sm100a_fastmath": [f"{R}/te_build_issue14_sm100a/original.partial.ninja_log",
                                            f"{R}/te_build_issue14_sm100a/original.partial.nvcc_time.csv.gz",
                                            "partial (94 steps; device session ended), 2026-12-02 "
                                            "(te_build_issue14_sm100a.md): 100, 100a, 103a targets"],
               "what_ifs": f"{ORIG}/what_if/RULE.{{sm90,sm100a}}.what_if.json: codemod analyze --target RULE over "
                           "the original tree (scripts/stage_te.sh, d0067d0) with each log",
               "specs": f"{ORIG}/{{six_arch,sm100a_fastmath,sm90}}.retarget.json (constants and their sources "
                        "under `about`)",
               "order": f"{ORIG}/run2_first.txt (the 16 sources run 2's tree lists first)"},
           "builds": {}}
    out["diagnosis"] = {"machine_speed_sm90": machine_speed(), "every_instantiation_weighs_1": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (spec, run, wall) in BUILDS.items():
            measured = measured_units(f"{R}/te_issue31/run2/{run}.ninja_log",
                                      f"{R}/te_issue31/run2/{run}.nvcc_time.csv.gz")
            for what_ifs in ("what_if", "what_if_diagnosis"):
                path = f"{tmp}/{name}.json"
                args = command(spec, path, what_ifs)
                if codemod(args + ["--top", "0"]) != 0:
                    return 1
                doc = compare(json.loads(Path(path).read_text()), measured, wall)
                line = {"command": "codemod " + " ".join(a.replace(f"{tmp}/", "OUT/") for a in args)}
                if what_ifs == "what_if":
                    out["builds"][name] = line | {"measured": f"{R}/te_issue31/run2/{run}.ninja_log"} | doc
                else:
                    out["diagnosis"]["every_instantiation_weighs_1"][name] = line | {
                        k: doc[k] for k in ("predicted_wall_s", "measured_wall_s", "error_pct", "predicted_cpu_s",
                                            "cpu_error_s_grouped_units", "cpu_error_s_other_units")}
    text = json.dumps(out, indent=1) + "\n"
    if a.json:
        Path(a.json).write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
