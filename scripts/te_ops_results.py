"""Issue 14 acceptance 3 (the C++ half): a `bundle_te` device chain's res/ folder (scripts/device_norm.sh,
unpacked from norm_results.tgz) as docs/results/<name>.{json,md}: TE's own C++ operator tests for cast
and activation (`tests/cpp/operator`, built once, run against the original and the migrated library),
their outcomes compared test by test, and the two sm_90 builds the chain timed.

    python scripts/te_ops_results.py RES_DIR --filter 'GTEST_FILTER' --te-commit d0067d0 \
        --rules activation,scaled_activation,fused_router,fp4_transpose [--out docs/results/te_ops_tests]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import te_norm_results as norm  # noqa: E402


def suites(res: Path) -> dict[str, dict[str, int]]:
    """gtest suite -> passed / failed / skipped on the original library (the migrated one's outcomes
    are compared test by test in `outcome_differences`)."""
    out: dict[str, dict[str, int]] = {}
    for name, outcome in norm.test_outcomes(res, "original").items():
        suite = name.split(".")[0].split("/")[-1]
        row = out.setdefault(suite, {"passed": 0, "failed": 0, "skipped": 0})
        row[outcome] += 1
    return dict(sorted(out.items(), key=lambda kv: -sum(kv[1].values())))


def collect(res: Path, test_filter: str, te_commit: str, rules: list[str]) -> dict:
    env = norm.read_environment(res)
    builds = {side: norm.build_record(res, side, {}) for side in ("original", "migrated")}
    commit = next((b["codemod_commit"] for b in builds.values() if b and b.get("codemod_commit")), "")
    for b in builds.values():  # norm-specific fields of build_record
        for key in ("normalization_steps", "normalization_cpu_s", "fused_softmax_cpu_s", "so_bytes"):
            (b or {}).pop(key, None)
    return {
        "schema": "codemod-result/1",
        "what": ("TE transformer_engine/common, sm_90: TE's C++ operator tests for cast and activation built once "
                 "and run against the original and the rule-migrated library (scripts/device_norm.sh through the "
                 "git-ignored bundle_te driver; build commands given at run time, not committed)"),
        "te_commit": te_commit, "rules": rules, "codemod_commit": commit, "date": env.get("date", ""),
        "machine": env, "stages": (res / "stages").read_text().splitlines() if (res / "stages").is_file() else [],
        "builds": builds, "tests": norm.tests_summary(res, test_filter), "suites": suites(res),
    }


def render(r: dict) -> str:
    t, m = r["tests"], r["machine"]
    o, g = t["sides"]["original"], t["sides"]["migrated"]
    lines = [
        "# TE's C++ cast and activation operator tests on the original and the migrated library (H200)", "",
        f"TE {r['te_commit']} with the rules {', '.join(r['rules'])} applied by codemod {r['codemod_commit']}; "
        f"{m.get('gpu', '')}, driver {m.get('driver', '')}, {m.get('nvcc', '')}, {m.get('nproc', '')} cores; "
        f"{r['date']}. Machine-readable: the `.json` beside this file. The test binary was built once "
        f"(linked against the {t.get('linked_against')} library) and each run loaded one library (`ldd`: "
        f"{'; '.join(o['loaded'] + g['loaded'])}).", "",
        f"gtest filter: `{t['filter']}`", "",
        "| library | tests | passed | failed | skipped | wall (16 shards) |", "|---|---:|---:|---:|---:|---:|",
        *(f"| {side} | {s['tests']:,} | {s['passed']:,} | {s['failed']} | {s['skipped']:,} | {s.get('wall_s', '?')} s |"
          for side, s in (("original", o), ("migrated", g))), "",
        f"**Outcomes that differ between the libraries: {len(t['outcome_differences'])}.** "
        f"Failed: {len(t['failed_original'])} original, {len(t['failed_migrated'])} migrated.", "",
        "Skips are TE's own conditions, the same on both libraries. Read in TE's test sources at d0067d0: "
        "every bare `GTEST_SKIP()` below follows `getDeviceComputeCapability() < blackwellComputeCapability` "
        "except `test_cast_float8blockwise.cu`'s two (a shape case the kernel does not handle); the messages "
        "are TE's. Every skip reason on the original library:", "",
        *(f"- `{why}`: {n}" for why, n in o["skip_reasons"].items()), "",
        "| suite | passed | skipped | failed |", "|---|---:|---:|---:|",
        *(f"| {s} | {c['passed']} | {c['skipped']} | {c['failed']} |" for s, c in r["suites"].items()), "",
        "## The builds of the same run", "",
        "Both trees were built at the same time on the same 16 cores (`ninja -j16` each), so the walls are "
        "not a paired comparison of equal halves; they are here for the record.", "",
        "| tree | wall | CPU (ninja log) | steps |", "|---|---:|---:|---:|",
        *(f"| {side} | {b['wall_s']:.1f} s | {b.get('cpu_s_ninja_log', 0):,.1f} s | {b.get('steps')} |"
          for side, b in r["builds"].items() if b), "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("res", type=Path)
    ap.add_argument("--filter", required=True, help="the gtest filter the chain ran (TESTS_FILTER)")
    ap.add_argument("--te-commit", required=True)
    ap.add_argument("--rules", required=True, help="comma-separated rule ids applied to the migrated tree")
    ap.add_argument("--out", type=Path, default=Path("docs/results/te_ops_tests"))
    args = ap.parse_args(argv)
    if not (args.res / "stages").is_file() or not list(args.res.glob("tests-original-*.xml")):
        print(f"te_ops_results: {args.res} holds no stages file or test XML (not a device_norm.sh res/ folder)",
              file=sys.stderr)
        return 2
    return norm.write_result(args.out, collect(args.res, args.filter, args.te_commit, args.rules.split(",")), render)


if __name__ == "__main__":
    sys.exit(main())
