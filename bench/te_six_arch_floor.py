"""An estimate of TE's six-arch floor (its default source build with CUDA 13: targets 75 80 89 90 +
100 120 for the generic units, + 100a 103a 120f for the arch-specific ones) from single-arch
logs, until a six-arch build is measured: the floor of `codemod impact --floor` (every CUDA step
keeps its host phases, the kept steps stay), replayed on the sm_90 build's schedule, with each kept
step's device time re-priced for the six-arch target list. Not a timing benchmark: a model.

    .venv/bin/python bench/te_six_arch_floor.py SM90_LOG SM90_CSV SM100A_LOG SM100A_CSV [--json OUT]

Per kept step: host phases once (sm_90 log) + pre-Blackwell targets x its sm_90 per-target device
time (device phases / the cicc targets of that compile) + Blackwell targets x its sm_100a
per-target device time (the sm_100a log of the same unit). Targets: 4 + 2 for a generic unit, 4 +
3 for an arch-specific one, one more (sm_90a) for gemm/cutlass_grouped_gemm.cu (TE's CMake adds it).
Blackwell generic targets (sm_100, sm_120) are priced like sm_100a. Kept: what cannot move to NVRTC
(docs/results/te_transpose_rule.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemod.impact.floor import floor_what_if, parse_keep  # noqa: E402
from codemod.impact.predict import load, predict  # noqa: E402

KEEP = ["fused_attn/fused_attn_fp8.cu=cuDNN frontend graphs",
        "fused_attn/fused_attn_f16_arbitrary_seqlen.cu=cuDNN frontend graphs",
        "fused_attn/utils.cu=cuDNN frontend graphs",
        "normalization/*_kernel.cu=cuDNN frontend header, no kernels",
        "gemm/cutlass_grouped_gemm.cu=CUTLASS kernels",
        "hadamard_transform/*cast_fusion.cu=CuTe/CUTLASS kernels"]
ARCH_SPECIFIC = ("gemm/cutlass_grouped_gemm.cu", "hadamard_transform/")


def _per_target(inv) -> tuple[float, float]:
    """(device ms per cicc target, host ms) of one nvcc invocation."""
    targets = max(1, len([k for k in inv.arch_ms() if k.startswith("cicc")]))
    host, device = inv.host_device_ms()
    return device / targets, host


def estimate(sm90_log: str, sm90_csv: str, sm100a_log: str, sm100a_csv: str) -> dict:
    base, blackwell = load(sm90_log, [sm90_csv]), load(sm100a_log, [sm100a_csv])
    floor = floor_what_if(base, parse_keep(KEEP))
    scale = dict(floor.what_if["scale"])
    units = {}
    for kept in floor.kept:
        inv = base.nvcc[kept["name"]]
        d90, host = _per_target(inv)
        tail = kept["name"].split(".dir/", 1)[-1]
        other = next((v for k, v in blackwell.nvcc.items() if k.endswith("/" + tail)), None)
        d100 = _per_target(other)[0] if other is not None else d90
        pre = 4 + (1 if "cutlass_grouped_gemm" in tail else 0)
        bw = 3 if tail.startswith(ARCH_SPECIFIC) else 2
        est = host + pre * d90 + bw * d100
        scale[kept["name"]] = est / sum(inv.host_device_ms())
        units[tail] = {"reason": kept["reason"], "six_arch_s": round(est / 1000, 1), "host_s": round(host / 1000, 1),
                       "sm90_per_target_device_s": round(d90 / 1000, 1),
                       "sm100a_per_target_device_s": round(d100 / 1000, 1), "targets": pre + bw}
    doc = predict(base, {"remove": [], "scale": scale}, max_steps=0)
    crit = doc["critical"]["predicted"]["step"]
    return {"kind": "estimate (model), not a measured build", "inputs": [sm90_log, sm90_csv, sm100a_log, sm100a_csv],
            "jobs": doc["options"]["jobs"], "policy": doc["options"]["policy"],
            "six_arch_floor_wall_s": doc["predicted_wall_s"], "six_arch_floor_cpu_s": doc["cpu_s_after"],
            "critical_step": crit["name"], "critical_step_s": crit["elapsed_s"],
            "kept_units": dict(sorted(units.items(), key=lambda kv: -kv[1]["six_arch_s"]))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sm90_log")
    ap.add_argument("sm90_csv")
    ap.add_argument("sm100a_log")
    ap.add_argument("sm100a_csv")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    doc = estimate(args.sm90_log, args.sm90_csv, args.sm100a_log, args.sm100a_csv)
    text = json.dumps(doc, indent=1) + "\n"
    if args.json:
        Path(args.json).write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
