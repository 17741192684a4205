"""What each migration scope would buy on TE's committed build: `codemod analyze --build-log` run
with growing kernel sets (not a timing benchmark; the numbers come from the replay model).

    TE_SOURCE_DIR=/path/to/TransformerEngine .venv/bin/python bench/te_what_if.py BUILD_LOG NVCC_TIME_CSV

Writes bench/results/te_what_if.{json,txt}. Scopes: the four kernels `rules/activation.yaml`
migrates; those plus every grouped cast kernel; every kernel the activation and cast entry points
reach. For each: the instantiation-share prediction, the device-removed bound and the TU-removed
bound, with the critical step after; each replayed with the recorded build's scheduling policy and
with `master` (ninja's duration-weighted critical path: the longest work starts first).
"""

from __future__ import annotations

import copy
import json
import os
import sys
from pathlib import Path

from codemod.analysis.analyze import analyze
from codemod.analysis.pricing import attach_impact
from codemod.model import Analysis
from codemod.rule import load_rule

OUT = Path(__file__).resolve().parent / "results"


def main(argv: list[str]) -> int:
    if len(argv) != 2 or "TE_SOURCE_DIR" not in os.environ:
        print(__doc__, file=sys.stderr)
        return 2
    log, csv = argv
    rules = [load_rule("activation"), load_rule("cast")]
    base = analyze(Path(os.environ["TE_SOURCE_DIR"]) / "transformer_engine" / "common", rules).to_json()
    kernels = {k["id"] for k in base["kernels"]}
    four = set(rules[0].raw["migrate"]["kernels"])
    scopes = {"rules/activation.yaml (4 kernels)": four,
              "+ every grouped cast kernel": four | {k for k in kernels if "group" in k.lower()},
              "every activation + cast kernel": kernels}
    rows = []
    for name, moved in scopes.items():
        row = {"scope": name, "kernels": len(moved)}
        for policy in (None, "master"):
            a = Analysis.from_json(copy.deepcopy(base))
            attach_impact(a, Path(log), [Path(csv)], moved, policy=policy)
            i = a.impact
            row.update({"migrated_tus": len(i["migrated_tus"]), "measured_wall_s": i["measured_wall_s"],
                        "cpu_s_before": i["cpu_s_before"]})
            key = "recorded_policy" if policy is None else "policy_master"
            row[key] = {"policy": i["policy"], "replayed_wall_s": i["replayed_wall_s"],
                        **{m: i[m] for m in ("instantiation_share", "device_removed", "tu_removed")}}
        rows.append(row)
    OUT.mkdir(exist_ok=True)
    (OUT / "te_what_if.json").write_text(json.dumps({"build_log": Path(log).name, "nvcc_time": Path(csv).name,
                                                     "scopes": rows}, indent=1) + "\n")
    lines = [f"codemod analyze --build-log what-ifs on {Path(log).name} (measured {rows[0]['measured_wall_s']} s, "
             f"CPU {rows[0]['cpu_s_before']} s)"]
    lines.append(f"wall s with the recorded policy ({rows[0]['recorded_policy']['policy']}) / with `master` "
                 f"(unchanged build replayed: {rows[0]['recorded_policy']['replayed_wall_s']} / "
                 f"{rows[0]['policy_master']['replayed_wall_s']} s)")
    for r in rows:
        lines.append(f"{r['scope']}: {r['kernels']} kernels, {r['migrated_tus']} TUs")
        for m in ("instantiation_share", "device_removed", "tu_removed"):
            p, q = r["recorded_policy"][m], r["policy_master"][m]
            lines.append(f"  {m:20s} wall {p['predicted_wall_s']:7.1f} / {q['predicted_wall_s']:7.1f} s  "
                         f"CPU {p['cpu_s_after']:7.1f} s  critical {(p['critical_after'] or '?').split('/')[-1]} / "
                         f"{(q['critical_after'] or '?').split('/')[-1]}")
    (OUT / "te_what_if.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
