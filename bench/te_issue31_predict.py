"""Issue 31's predictions, made before the device run: TE d0067d0 with the five rules and the norm
header's device-pass trim (rules/transpose.yaml `device_pass`), from the four-rule builds' logs of
the H200 host (sm_90: te_build/run7_issue13/migrated; sm_100a + fast math:
te_build_issue14_sm100a/migrated) and the transpose rule's what-ifs (`codemod analyze --target
transpose --build-log LOG --json F` over the four-rule tree: F's impact.what_if). A model, not a
timing benchmark.

    .venv/bin/python bench/te_issue31_predict.py SM90_LOG SM90_CSV SM90_ANALYSIS SM100A_LOG SM100A_CSV \
        SM100A_ANALYSIS [--json OUT]

- sm_90, sm_100a: the build's own log replayed with the transpose what-if (instantiation_share) and
  the four norm kernel units' device phases reduced to TRIMMED_DEVICE_S per target (the trimmed
  units instantiate no kernel; cicc measured 1.0 s at sm_90 on the CPU machine).
- six archs (TE's default with CUDA 13: 75 80 89 90 100 120): the sm_90 build's schedule, every
  CUDA step re-priced as host once (sm_90 log) + sm_90 and 3 pre-Hopper targets at its sm_90
  per-target device time (pre-Hopper x PRE_HOPPER_SHARE_ARCH_SPECIFIC for an arch-specific unit) + 2 (generic unit) or 3 (arch-specific: 100a 103a 120f, seen as `a` targets in the
  sm_100a log) Blackwell targets at its sm_100a per-target device time (+ sm_90a where the sm_100a
  log has it: the CUTLASS grouped GEMM), the transpose units' device part scaled by the share the
  what-if leaves static, the norm units trimmed as above. Blackwell generic targets (sm_100,
  sm_120) are priced like the sm_100a log's; fast math (on in that log, off in the six-arch
  default) is not modelled; nor is the link's growth with six archs of fatbins.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemod.impact.order import first_steps as _first_steps  # noqa: E402
from codemod.impact.order import read_order as _read_order  # noqa: E402
from codemod.impact.predict import glob_matches, load, predict  # noqa: E402
from codemod.impact.targets import static_share  # noqa: E402

NORM = "normalization/*/*_cuda_kernel.cu"
TRIMMED_DEVICE_S = 1.0
# An arch-specific unit's device time per pre-Hopper target (sm_75, 80, 89) against its sm_90 one:
# what the four rules leave static there is mostly Hopper-gated (TMA) code, empty below sm_90.
# Measured at seven targets on the CPU machine (te_tu_six_arch_cpu.json, migrated): gelu.cu 2.97 /
# 23.8 s = 0.125, cast.cu 3.1 / 27.0 s = 0.115. Generic units: 1.
PRE_HOPPER_SHARE_ARCH_SPECIFIC = 0.12
# Units rules/transpose.yaml's `device_pass` hides whole (`unit:` entries, added after the first
# prediction): cicc 0.37 s + ptxas 0.03 s per target (fused_attn_fp8.cu at sm_90, CPU machine).
HIDDEN_UNIT_DEVICE_S = 0.4


def hidden_units(rule: Path = Path(__file__).resolve().parents[1] / "rules" / "transpose.yaml") -> list[str]:
    import yaml

    data = yaml.safe_load(rule.read_text())
    return [e["unit"] for e in data["migrate"].get("device_pass", []) if "unit" in e]


def _tail(name: str) -> str:
    return name.split(".dir/", 1)[-1]


def _split(inv) -> tuple[float, float, list[str]]:
    """(host ms, device ms, cicc targets) of one nvcc invocation."""
    targets = sorted(k.split()[1] for k in inv.arch_ms() if k.startswith("cicc"))
    return (*inv.host_device_ms(), targets)


def _static_share(what_if: dict, name: str, host: float, device: float) -> float:
    """The share of a unit's device time the what-if leaves static (1 when it does not touch it)."""
    for glob, f in what_if["scale"].items():
        if glob_matches(glob, [name]):
            return static_share(f, host, device)
    return 1.0


def first_steps(loaded, order: list[str]) -> list[str]:
    """The build's step names of the sources the build-order edit lists first, in its order."""
    return _first_steps(list(loaded.steps.name), order)


def read_order(diff: str) -> list[str]:
    """The sources of the `<target>_longest_sources` list a build-order edit (apply --build-log) adds."""
    return _read_order(Path(diff).read_text())


def single_arch(log: str, csv: str, analysis: str, order: list[str] | None = None,
                hidden: list[str] | None = None) -> dict:
    loaded = load(log, [csv])
    what_if = json.loads(Path(analysis).read_text())["impact"]["what_if"]
    scale = dict(what_if["scale"])
    for name, inv in loaded.nvcc.items():
        if glob_matches("*/" + NORM + ".o", [name]):
            host, device, targets = _split(inv)
            scale[name] = (host + TRIMMED_DEVICE_S * 1000 * len(targets)) / (host + device)
        elif hidden and _tail(name)[:-2] in hidden:
            host, device, targets = _split(inv)
            scale[name] = (host + HIDDEN_UNIT_DEVICE_S * 1000 * len(targets)) / (host + device)
    doc = predict(loaded, {"remove": [], "scale": scale}, max_steps=0, first=first_steps(loaded, order or []))
    crit = doc["critical"]["predicted"]["step"]
    return {"log": log, "measured_wall_s": doc["measured_wall_s"], "replayed_wall_s": doc["replayed_wall_s"],
            "transpose_what_if": what_if["scale"],
            "transpose_what_if_wall_s": json.loads(Path(analysis).read_text())["impact"]["predicted_wall_s"],
            "predicted_wall_s": doc["predicted_wall_s"], "predicted_cpu_s": doc["cpu_s_after"],
            "critical_step": _tail(crit["name"]), "critical_step_s": crit["elapsed_s"],
            "jobs": doc["options"]["jobs"], "policy": doc["options"]["policy"]}


def six_arch(sm90: tuple[str, str, str], sm100a: tuple[str, str, str], order: list[str] | None = None,
             hidden: list[str] | None = None) -> dict:
    base, bw = load(sm90[0], [sm90[1]]), load(sm100a[0], [sm100a[1]])
    wi90 = json.loads(Path(sm90[2]).read_text())["impact"]["what_if"]
    wi100 = json.loads(Path(sm100a[2]).read_text())["impact"]["what_if"]
    by_tail = {_tail(k): (k, v) for k, v in bw.nvcc.items()}
    scale, units = {}, {}
    for name, inv in base.nvcc.items():
        tail = _tail(name)
        host, d90, t90 = _split(inv)
        per90 = d90 / max(1, len(t90))
        other = by_tail.get(tail)
        if other is not None:
            _, d100, t100 = _split(other[1])
            specific = any(t.endswith("a") and not t.endswith("90a") for t in t100)
            bw_targets = [t for t in t100 if not t.endswith("90a")]
            per100 = sum(v for k, v in other[1].arch_ms().items() if k.split()[1].replace("compute_", "sm_")
                         in {t.replace("compute_", "sm_") for t in bw_targets}) / max(1, len(bw_targets))
            sm90a = sum(v for k, v in other[1].arch_ms().items() if k.split()[1].endswith("90a"))
            share100 = _static_share(wi100, other[0], _split(other[1])[0], d100)
        else:
            specific, per100, sm90a, share100 = False, per90, 0.0, 1.0
        share90 = _static_share(wi90, name, host, d90)
        n_bw = 3 if specific else 2
        if glob_matches("*/" + NORM + ".o", [name]):
            device = (4 + n_bw) * TRIMMED_DEVICE_S * 1000
        elif hidden and tail[:-2] in hidden:
            device = (4 + n_bw) * HIDDEN_UNIT_DEVICE_S * 1000
        else:
            pre = 1 + 3 * (PRE_HOPPER_SHARE_ARCH_SPECIFIC if specific else 1.0)
            device = pre * per90 * share90 + n_bw * per100 * share100 + sm90a
        est = host + device
        scale[name] = est / (host + d90)
        units[tail] = {"six_arch_s": round(est / 1000, 1), "host_s": round(host / 1000, 1),
                       "sm90_per_target_device_s": round(per90 / 1000, 1),
                       "sm100a_per_target_device_s": round(per100 / 1000, 1),
                       "static_share": [round(share90, 3), round(share100, 3)],
                       "targets": 4 + n_bw + (1 if sm90a else 0)}
    doc = predict(base, {"remove": [], "scale": scale}, max_steps=0, first=first_steps(base, order or []))
    crit = doc["critical"]["predicted"]["step"]
    top = dict(sorted(units.items(), key=lambda kv: -kv[1]["six_arch_s"])[:20])
    return {"kind": "estimate (model), not a measured build", "schedule_from": sm90[0],
            "predicted_wall_s": doc["predicted_wall_s"], "predicted_cpu_s": doc["cpu_s_after"],
            "critical_step": _tail(crit["name"]), "critical_step_s": crit["elapsed_s"],
            "jobs": doc["options"]["jobs"], "policy": doc["options"]["policy"], "longest_units": top}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for side in ("sm90", "sm100a"):
        for what in ("log", "csv", "analysis"):
            ap.add_argument(f"{side}_{what}")
    ap.add_argument("--order", metavar="DIFF", help="a diff with the build-order edit: its sources first, in its "
                                                   "order, in every replay")
    ap.add_argument("--hidden-units", action="store_true",
                    help="six archs: price the units rules/transpose.yaml's device_pass hides whole at "
                         "HIDDEN_UNIT_DEVICE_S per target")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    sm90 = (a.sm90_log, a.sm90_csv, a.sm90_analysis)
    sm100a = (a.sm100a_log, a.sm100a_csv, a.sm100a_analysis)
    order = read_order(a.order) if a.order else []
    hidden = hidden_units() if a.hidden_units else None
    doc = {"order": order, "hidden_units": hidden or [], "sm90": single_arch(*sm90, order, hidden),
           "sm100a": single_arch(*sm100a, order, hidden), "six_arch": six_arch(sm90, sm100a, order, hidden)}
    text = json.dumps(doc, indent=1) + "\n"
    if a.json:
        Path(a.json).write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
