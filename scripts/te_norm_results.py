"""Issue 13 acceptance 1: the device run of scripts/device_norm.sh (its `res/` folder, unpacked from
norm_results.tgz) and the CPU-side inputs, written as docs/results/<name>.{json,md}: the three clean
builds (original, rule-migrated, TE's hand migration), .so sizes, byte parity, TE's C++
normalization tests on both libraries, and the side by side with the hand migration.

    python scripts/te_norm_results.py RES_DIR --analysis A.json --patch te_norm_mig.patch \
        --hand-numstat hand.numstat [--pair PAIR_RES_DIR] [--rule rules/normalization.yaml] \
        [--out docs/results/te_norm_device]

--analysis: `codemod analyze ... --target normalization --json` of the original tree; --patch: the
migrated copy's diff (scripts/norm_bundles.sh writes NAME_mig.patch); --hand-numstat: `git diff
--numstat 6377ca161 aef96db0c` in a TE clone (TE's hand migration, PR #3156); --pair: the res/ of
a second session's `device_norm.sh pair` (rule and hand built at the same time), whose builds then
fill the side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SIDES = ("original", "migrated", "hand")
TE_ORIGINAL, TE_HAND = "6377ca161", "aef96db0c"
NORM = "normalization/"
SOFTMAX = "fused_softmax/"


def read_environment(res: Path) -> dict:
    """environment.txt as device_norm.sh writes it: nvidia-smi's csv line, nvcc's last two lines,
    ninja, cmake, nproc, date."""
    lines = (res / "environment.txt").read_text().splitlines() if (res / "environment.txt").is_file() else []
    env: dict = {}
    for line in lines:
        if line.count(",") == 2 and "MiB" in line:
            env["gpu"], env["driver"], env["gpu_memory"] = (x.strip() for x in line.split(","))
        elif line.startswith("Build cuda"):
            env["nvcc"] = line.split()[1]
        elif line.startswith("cmake version"):
            env["cmake"] = line.split()[-1]
        elif line.startswith("nproc "):
            env["nproc"] = int(line.split()[1])
        elif re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:]+Z", line.strip()):
            env["date"] = line.strip()
        elif re.fullmatch(r"\d+\.\d+(\.\d+)?(\.git)?", line.strip()):
            env["ninja"] = line.strip()
    cpus = res / "cpus.txt"
    if cpus.is_file():
        for line in cpus.read_text().splitlines():
            half, _, ids = line.partition(" ")
            env[f"cpus_{half.lower()}"] = ids
    return env


def ninja_steps(path: Path) -> list[tuple[str, float, float]]:
    """(output, start s, elapsed s) of each step of the log's last build (codemod's own parser)."""
    from codemod.impact.ninja_log import parse_path

    build = parse_path(str(path)).build()
    return [(s.name, s.start_ms / 1000, s.elapsed_ms / 1000) for c in build.cycles for s in c.steps()]


def tu_name(output: str) -> str:
    """A ninja output -> the source path under transformer_engine/common it compiles."""
    m = re.search(r"CMakeFiles/[^/]+\.dir/(.+?)\.o$", output)
    return m.group(1) if m else output


def build_record(res: Path, side: str, sizes: dict) -> dict | None:
    rec_path = res / f"build-{side}.json"
    rc_path = res / f"parity-build-{side}.rc"
    if not rec_path.is_file():
        return {"rc": rc_path.read_text().strip()} if rc_path.is_file() else None
    rec = json.loads(rec_path.read_text())
    out = {"wall_s": rec["build"]["wall_s"], "cpu_s": rec["build"]["cpu_s"],
           "configure_s": rec.get("configure", {}).get("wall_s"),
           "cpus": (res / f"parity-build-{side}.cpus").read_text().strip()
           if (res / f"parity-build-{side}.cpus").is_file() else None,
           "rc": rc_path.read_text().strip() if rc_path.is_file() else None,
           "so_bytes": sizes.get(side), "codemod_commit": rec.get("environment", {}).get("commit", "")}
    log = res / f"{side}.ninja_log"
    if log.is_file():
        steps = ninja_steps(log)
        out["steps"] = len(steps)
        out["cpu_s_ninja_log"] = round(sum(e for _, _, e in steps), 1)
        norm = [(tu_name(o), e) for o, _, e in steps if NORM in o]
        out["normalization_steps"] = len(norm)
        out["normalization_cpu_s"] = round(sum(e for _, e in norm), 1)
        # TE's PR #3156 moved the fused softmax kernels to NVRTC too: their share, to set apart.
        out["fused_softmax_cpu_s"] = round(sum(e for o, _, e in steps if SOFTMAX in o), 1)
        longest = sorted(steps, key=lambda s: -s[2])[:5]
        out["longest"] = [{"step": tu_name(o), "start_s": round(st, 1), "elapsed_s": round(e, 1)}
                          for o, st, e in longest]
    return out


def skip_reason(case: ET.Element) -> str:
    """A skipped test's reason: gtest's message without its leading `path:line`, or `file:line`
    (no message) for a bare GTEST_SKIP()."""
    node = case.find("skipped")
    text = (node.get("message") or node.text or "") if node is not None else ""
    first, _, rest = text.strip().partition("\n")
    if re.match(r"^\S+:\d+$", first):
        return rest.strip() or f"{Path(first).name} (no message)"
    return text.strip() or "(no message)"


def test_outcomes(res: Path, side: str, reasons: dict[str, int] | None = None) -> dict[str, str]:
    """test name -> passed / failed / skipped over every shard's gtest XML of one side; with
    REASONS, also count each skip reason."""
    outcomes: dict[str, str] = {}
    for xml in sorted(res.glob(f"tests-{side}-*.xml")):
        for case in ET.parse(xml).getroot().iter("testcase"):
            name = f"{case.get('classname', '')}.{case.get('name')}"
            if case.find("failure") is not None or case.find("error") is not None:
                outcomes[name] = "failed"
            elif case.get("result") == "skipped" or case.find("skipped") is not None:
                outcomes[name] = "skipped"
                if reasons is not None:
                    why = skip_reason(case)
                    reasons[why] = reasons.get(why, 0) + 1
            else:
                outcomes[name] = "passed"
    return outcomes


def tests_summary(res: Path, test_filter: str = "*NormTestSuite*") -> dict:
    status = {}
    if (res / "tests.status").is_file():
        for line in (res / "tests.status").read_text().splitlines():
            side, *kv = line.split()
            status[side] = dict(x.split("=", 1) for x in kv)
    out: dict = {"filter": test_filter, "sides": {}}
    reasons: dict[str, dict[str, int]] = {"original": {}, "migrated": {}}
    outcomes = {side: test_outcomes(res, side, reasons[side]) for side in ("original", "migrated")}
    for side, oc in outcomes.items():
        counts = {k: sum(1 for v in oc.values() if v == k) for k in ("passed", "failed", "skipped")}
        ldd = res / f"tests-{side}.ldd"
        # which library the run loaded, without the device's paths: `libtransformer_engine.so => WORK/build-SIDE/...`
        loaded = [re.sub(r"=> \S*/(build-[^/\s]+/\S+)(\s*\(0x[0-9a-f]+\))?", r"=> WORK/\1", l.strip())
                  for l in ldd.read_text().splitlines() if "libtransformer_engine" in l] if ldd.is_file() else []
        by_backend: dict[str, int] = {}
        for n, v in oc.items():  # OperatorTest/NormTestSuite.TestNorm/TeRmsNorm_float32X...: the backend
            if v == "passed":
                b = n.rsplit("/", 1)[-1].split("_", 1)[0]
                by_backend[b] = by_backend.get(b, 0) + 1
        out["sides"][side] = {"tests": len(oc), **counts, **status.get(side, {}), "loaded": loaded,
                              "passed_by_backend": dict(sorted(by_backend.items())),
                              "skip_reasons": dict(sorted(reasons[side].items(), key=lambda kv: -kv[1]))}
    stages = (res / "stages").read_text() if (res / "stages").is_file() else ""
    m = re.search(r"tests build started, linked against the (\w+) library", stages)
    out["linked_against"] = m.group(1) if m else None
    both = set(outcomes["original"]) | set(outcomes["migrated"])
    out["outcome_differences"] = sorted(
        f"{n}: {outcomes['original'].get(n, 'absent')} -> {outcomes['migrated'].get(n, 'absent')}"
        for n in both if outcomes["original"].get(n) != outcomes["migrated"].get(n))
    out["failed_original"] = sorted(n for n, v in outcomes["original"].items() if v == "failed")
    out["failed_migrated"] = sorted(n for n, v in outcomes["migrated"].items() if v == "failed")
    log = res / "tests-build.log"
    if log.is_file():
        m = re.search(r"configure_s=(\d+) build_s=(\d+)", log.read_text())
        if m:
            out["build"] = {"configure_s": int(m.group(1)), "build_s": int(m.group(2))}
    return out


def patch_numstat(text: str) -> dict[str, tuple[int, int]]:
    """file -> (added, removed) lines of a git patch."""
    stats: dict[str, list[int]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("diff --git "):
            current = line.split(" b/", 1)[1]
            stats[current] = [0, 0]
        elif current is None or line.startswith(("+++ ", "--- ")):
            continue
        elif line.startswith("+"):
            stats[current][0] += 1
        elif line.startswith("-"):
            stats[current][1] += 1
    return {k: (a, r) for k, (a, r) in stats.items()}


def read_numstat(text: str) -> dict[str, tuple[int, int]]:
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0].isdigit():
            out[parts[2]] = (int(parts[0]), int(parts[1]))
    return out


def group_lines(stat: dict[str, tuple[int, int]]) -> dict[str, list[int]]:
    """(added, removed) per part of the tree a reviewer reads apart."""
    groups: dict[str, list[int]] = {}
    for path, (a, r) in stat.items():
        p = path.removeprefix("transformer_engine/common/")
        if p.startswith(NORM):
            g = "normalization/"
        elif p.startswith("util/rtc"):
            g = "util/rtc.*"
        elif p in ("utils.cuh", "CMakeLists.txt", "common.h"):
            g = p
        elif path.startswith("tests/"):
            g = "tests/"
        elif path.startswith("docs/"):
            g = "docs/"
        else:
            g = "other"
        acc = groups.setdefault(g, [0, 0])
        acc[0] += a
        acc[1] += r
    return dict(sorted(groups.items()))


def rule_lines(path: Path) -> dict:
    lines = path.read_text().splitlines()
    code = [l for l in lines if l.strip() and not l.strip().startswith("#")]
    return {"file": str(path), "lines": len(lines), "not_comment_or_blank": len(code)}


def so_sizes(res: Path) -> dict[str, int]:
    sizes = {}
    if (res / "so_size.txt").is_file():
        for line in (res / "so_size.txt").read_text().splitlines():
            side, size = line.split()
            sizes[side] = int(size)
    return sizes


def pair_record(pair: Path) -> dict:
    """The rule-vs-hand builds of a `device_norm.sh pair` session's res/ folder."""
    psizes = so_sizes(pair)
    return {"machine": read_environment(pair),
            "stages": (pair / "stages").read_text().splitlines() if (pair / "stages").is_file() else [],
            **{side: build_record(pair, side, psizes) for side in ("migrated", "hand")}}


def add_pair(result: dict, pair: Path) -> dict:
    """A committed result (first session: original vs rule) with the second session's pair added: the
    side by side then quotes the pair's builds (rule and hand built at the same time)."""
    out = dict(result)
    out["pair"] = pair_record(pair)
    sbs = dict(out["side_by_side"])
    for side in ("migrated", "hand"):
        b = out["pair"].get(side) or {}
        sbs[f"{side}_build"] = {k: b.get(k) for k in ("wall_s", "cpu_s", "cpu_s_ninja_log", "normalization_cpu_s",
                                                      "fused_softmax_cpu_s", "so_bytes", "cpus")}
    out["side_by_side"] = sbs
    return out


def collect(res: Path, analysis: Path | None, patch: Path | None, hand_numstat: Path | None,
            rule: Path, pair: Path | None = None) -> dict:
    sizes = so_sizes(res)
    builds = {side: build_record(res, side, sizes) for side in SIDES}
    # The rule-vs-hand pair from a second session (`device_norm.sh pair`), when the first ran without HAND.
    pair_builds = pair_record(pair) if pair else None
    parity = None
    if (res / "parity_norm.json").is_file():
        p = json.loads((res / "parity_norm.json").read_text())
        parity = {k: p["parity"].get(k) for k in ("equal", "ran", "all_equal", "bytes_compared", "rejected_by_both",
                                                   "seconds", "shards")}
        parity.update(mismatch_count=p.get("mismatch_count"), seed=p.get("seed"),
                      entry_points=sorted({c.get("entry") for c in p.get("combinations", []) if c.get("entry")}))
        rejected: dict[str, dict] = {}  # entry point -> rejected cases and the errors both builds gave
        for c in p.get("combinations", []):
            if c.get("rejected"):
                r = rejected.setdefault(c["entry"].split("/")[0], {"cases": 0, "errors": []})
                r["cases"] += c["rejected"]
                r["errors"] += [str(e) for e in c.get("rejections", []) if str(e) not in r["errors"]]
        parity["rejected_by_entry"] = dict(sorted(rejected.items()))
        parity["bench_summary"] = p.get("bench_summary")
    stages = (res / "stages").read_text().splitlines() if (res / "stages").is_file() else []
    env = read_environment(res)
    commit = next((b["codemod_commit"] for b in builds.values() if b and b.get("codemod_commit")), "")
    result = {
        "schema": "codemod-result/1",
        "what": ("TE transformer_engine/common, sm_90: the original tree (before TE's hand NVRTC migration of the "
                 "norms), the same tree migrated by rules/normalization.yaml, and TE's hand migration; clean timed "
                 "builds, .so sizes, byte parity original vs rule-migrated, TE's C++ normalization tests on both "
                 "libraries (scripts/device_norm.sh; build commands given at run time, not committed)"),
        "te_commits": {"original": TE_ORIGINAL, "migrated": f"{TE_ORIGINAL} + codemod apply", "hand": TE_HAND},
        "codemod_commit": commit,
        "date": env.get("date", ""),
        "machine": env,
        "stages": stages,
        "builds": builds,
        "parity": parity,
        "tests": tests_summary(res),
        "pair": pair_builds,
        "side_by_side": side_by_side(pair_builds if pair_builds and pair_builds.get("hand") else builds,
                                     analysis, patch, hand_numstat, rule),
    }
    return result


def side_by_side(builds: dict, analysis: Path | None, patch: Path | None, hand_numstat: Path | None,
                 rule: Path) -> dict:
    out: dict = {"rule": rule_lines(rule)}
    if analysis:
        totals = json.loads(analysis.read_text())["totals"]
        out["kernels"] = totals["kernels"]
        out["instantiations"] = totals["instantiations"]
    if patch:
        stat = patch_numstat(patch.read_text(errors="replace"))
        out["rule_generated"] = {"files": len(stat), "added": sum(a for a, _ in stat.values()),
                                 "removed": sum(r for _, r in stat.values()), "by_part": group_lines(stat)}
    if hand_numstat:
        stat = read_numstat(hand_numstat.read_text())
        out["hand_written"] = {"files": len(stat), "added": sum(a for a, _ in stat.values()),
                               "removed": sum(r for _, r in stat.values()), "by_part": group_lines(stat)}
    for side in ("migrated", "hand"):
        b = builds.get(side) or {}
        out[f"{side}_build"] = {k: b.get(k) for k in ("wall_s", "cpu_s", "cpu_s_ninja_log", "normalization_cpu_s",
                                                      "fused_softmax_cpu_s", "so_bytes", "cpus")}
    return out


def _s(x, unit=" s") -> str:
    return "—" if x is None else f"{x:,.1f}{unit}" if isinstance(x, float) else f"{x:,}{unit}"


def verify_summary(v: dict) -> dict:
    """The part of a codemod-verify/1 report the results quote: what compiled, for which archs."""
    progs = v.get("programs", [])
    return {"ok": v.get("ok"), "kernels": v.get("kernels"), "variants_total": v.get("variants_total"),
            "variants_compiled": sum(p.get("variants", 0) for p in progs if p.get("arch") == (v.get("archs") or [""])[0]),
            "programs": len(progs), "programs_ok": sum(1 for p in progs if p.get("ok")),
            "archs": v.get("archs"), "nvrtc": v.get("nvrtc_version"), "seconds": v.get("seconds"),
            "jobs": v.get("jobs"), "host": (v.get("host") or {}).get("status")}


def render_markdown(r: dict) -> str:
    b, env, t, p, sbs = r["builds"], r["machine"], r["tests"], r["parity"], r["side_by_side"]
    lines = [
        "# TE normalization before its hand NVRTC migration: rule vs original vs hand, on the H200 (issue 13, "
        "acceptance 1)", "",
        f"TE `{TE_ORIGINAL}` (parent of `{TE_HAND}`, PR #3156) `transformer_engine/common`, sm_90; three trees: "
        f"**original**, **migrated** (`codemod apply --target normalization`, codemod `{r['codemod_commit']}`), "
        f"**hand** (TE's own migration, `{TE_HAND}`). One `nvidia-h200` machine: {env.get('gpu', '?')}, driver "
        f"{env.get('driver', '?')}, nvcc {env.get('nvcc', '?')}, ninja {env.get('ninja', '?')}, "
        f"{env.get('nproc', '?')} cores; {env.get('date', '?')}. The build commands were given at run time "
        "(`scripts/device_norm.sh`), not committed. JSON: the `.json` beside this file.", "",
        "## Clean builds", "",
        "Cores split in two halves by physical core: original on half A and migrated on half B at the same "
        "time; " + ("the hand tree on half B right after the migrated build (same cores, same command), while "
                    "half A built TE's C++ tests and ran parity." if b.get("hand") else
                    "then half B built TE's C++ tests and ran them, half A ran parity (the hand tree: next "
                    "section)."), "",
        "| | original | migrated (rule) | hand (PR #3156) |", "|---|---:|---:|---:|",
    ]
    def row(label, key, unit=" s"):
        return f"| {label} | " + " | ".join(_s((b.get(s) or {}).get(key), unit) for s in SIDES) + " |"
    lines += [row("build wall", "wall_s"), row("build CPU (all processes)", "cpu_s"),
              row("CPU, sum of ninja steps", "cpu_s_ninja_log"), row("of it `normalization/*`", "normalization_cpu_s"),
              row("of it `fused_softmax/*`", "fused_softmax_cpu_s"),
              row("configure wall", "configure_s"), row("ninja steps", "steps", ""),
              row("`libtransformer_engine.so` bytes", "so_bytes", ""),
              "| cores | " + " | ".join(f"`{(b.get(s) or {}).get('cpus') or '—'}`" for s in SIDES) + " |",
              "| exit status | " + " | ".join(str((b.get(s) or {}).get("rc")) for s in SIDES) + " |", ""]
    for side in SIDES:
        longest = (b.get(side) or {}).get("longest") or []
        if longest:
            lines.append(f"- {side}, longest steps: " + ", ".join(
                f"`{x['step']}` {x['elapsed_s']} s (from {x['start_s']} s)" for x in longest[:3]))
    pb = r.get("pair")
    if pb:
        penv = pb["machine"]
        lines += ["", "## Rule vs hand, built at the same time (second session)", "",
                  f"`scripts/device_norm.sh pair`: the migrated and the hand tree at the same time, each on its own "
                  f"half of the cores; {penv.get('gpu', '?')} machine, {penv.get('nproc', '?')} cores, "
                  f"{penv.get('date', '?')}.", "", "| | migrated (rule) | hand (PR #3156) |", "|---|---:|---:|"]
        for label, key, unit in (("build wall", "wall_s", " s"), ("build CPU (all processes)", "cpu_s", " s"),
                                 ("CPU, sum of ninja steps", "cpu_s_ninja_log", " s"),
                                 ("of it `normalization/*`", "normalization_cpu_s", " s"),
                                 ("of it `fused_softmax/*`", "fused_softmax_cpu_s", " s"),
                                 ("`libtransformer_engine.so` bytes", "so_bytes", ""), ("exit status", "rc", "")):
            lines.append(f"| {label} | " + " | ".join(
                _s((pb.get(sd) or {}).get(key), unit) if key != "rc" else str((pb.get(sd) or {}).get(key))
                for sd in ("migrated", "hand")) + " |")
    v = r.get("verify")
    if v:
        lines += ["", "## `codemod verify` of the migrated tree built here", "",
                  f"The same migrated tree (`--no-host`, on the CPU machine, {v['jobs']} process, NVRTC {v['nvrtc']}): "
                  f"{v['kernels']} kernels, {v['variants_compiled']} of {v['variants_total']} variants (greedy cover) "
                  f"for {', '.join(v['archs'])}: {v['programs_ok']} of {v['programs']} NVRTC programs compiled "
                  f"({'ok' if v['ok'] else 'FAILED'}; {v['seconds']:.0f} s)."]
    lines += ["", "## Byte parity, original vs migrated", ""]
    if p:
        lines += [f"**{p['equal']} of {p['ran']} cases byte-equal** ({'all equal' if p['all_equal'] else 'NOT all equal'}; "
                  f"{p['mismatch_count']} mismatches; {_s(p.get('bytes_compared'), '')} bytes compared; "
                  f"{p.get('rejected_by_both')} cases rejected by both; seed {p.get('seed')}; "
                  f"{p.get('shards')} shards; driver run " + ", ".join(
                      f"{k} {v} s" for k, v in sorted((p.get("seconds") or {}).items())) + "). Entry points: "
                  + ", ".join(f"`{e}`" for e in p["entry_points"]) + ".", ""]
        if p.get("rejected_by_entry"):
            lines += ["Rejected by both builds with the same error (TE's own checks; no case ran on one build only): "
                      + "; ".join(f"`{e}` {r['cases']} ({', '.join(repr(x) for x in r['errors'])})"
                                  for e, r in p["rejected_by_entry"].items()) + ".", ""]
        b = p.get("bench_summary") or {}
        if b:
            lines += [f"Warm time migrated / original (shape {b.get('shape')}, {b.get('reps')} reps): median "
                      f"{b.get('warm_ratio_median', 0):.3f} (min {b.get('warm_ratio_min', 0):.3f}, max "
                      f"{b.get('warm_ratio_max', 0):.3f}).", ""]
    else:
        lines += ["Not obtained (no `parity_norm.json` in the results).", ""]
    lines += ["## TE's C++ normalization tests (`tests/cpp/operator`, `test_operator`)", "",
              "Built once, as TE documents (`qa/L0_cppunittest/test.sh`: CMake + Ninja in `tests/cpp`), target "
              "`test_operator`, from the original tree's `tests/cpp` (equal in both trees, and every library file "
              "the tests include is equal: `scripts/norm_test_headers.py`), linked against the "
              f"{t.get('linked_against') or '(not recorded)'} library; each run loads one library through `LD_LIBRARY_PATH` (checked with `ldd`). Filter "
              f"`{t['filter']}` (NormTestSuite, MxNormTestSuite), gtest shards run at once.", ""]
    if t.get("build"):
        lines.append(f"Tests build: configure {t['build']['configure_s']} s, build {t['build']['build_s']} s.")
        lines.append("")
    lines += ["| library | tests | passed | failed | skipped | wall | exit |", "|---|---:|---:|---:|---:|---:|---:|"]
    for side in ("original", "migrated"):
        s = t["sides"].get(side, {})
        lines.append(f"| {side} | {s.get('tests', 0)} | {s.get('passed', 0)} | {s.get('failed', 0)} | "
                     f"{s.get('skipped', 0)} | {s.get('wall_s', '—')} s | {s.get('rc', '—')} |")
    po, pm = (t["sides"].get(k, {}).get("passed_by_backend", {}) for k in ("original", "migrated"))
    if po or pm:
        lines += ["", "Passed, by the backend in the test's name (`Te*` run TE's own kernels, the ones the rule "
                  "moved to NVRTC; `Cudnn*` run cuDNN's): "
                  + "; ".join(f"{b} {po.get(b, 0)} / {pm.get(b, 0)}" for b in dict.fromkeys([*po, *pm]))
                  + " (original / migrated)."]
    so, sm = (t["sides"].get(k, {}).get("skip_reasons", {}) for k in ("original", "migrated"))
    if so or sm:
        lines += ["", "Skipped, by the reason the test gives (TE's own skip conditions; `test_normalization_mxfp8.cu`'s "
                  "bare `GTEST_SKIP()` is its check for a Blackwell device):", "",
                  "| reason | original | migrated |", "|---|---:|---:|"]
        for why in dict.fromkeys([*so, *sm]):
            lines.append(f"| {why} | {so.get(why, 0)} | {sm.get(why, 0)} |")
    diffs = t["outcome_differences"]
    lines += ["", f"Tests whose outcome differs between the two libraries: **{len(diffs)}**"
              + ("" if not diffs else ": " + "; ".join(f"`{d}`" for d in diffs[:20])
                 + (f" (and {len(diffs) - 20} more)" if len(diffs) > 20 else "")) + ".", ""]
    lines += ["## Side by side with the hand migration", "",
              "| | hand (PR #3156) | codemod (rule) |", "|---|---|---|"]
    if "kernels" in sbs:
        lines.append(f"| kernel templates / instantiations moved to NVRTC | see `te_norm_apply.md` | "
                     f"{sbs['kernels']} / {sbs['instantiations']} (`codemod analyze` of the original) |")
    rl = sbs["rule"]
    hw, rg = sbs.get("hand_written"), sbs.get("rule_generated")
    def parts(x):
        return "; ".join(f"{k} +{a}/−{r}" for k, (a, r) in x["by_part"].items())
    lines.append(f"| lines a human wrote | {'+%d / −%d in %d files (%s)' % (hw['added'], hw['removed'], hw['files'], parts(hw)) if hw else '—'}"
                 f" | `{Path(rl['file']).name}`: {rl['lines']} lines ({rl['not_comment_or_blank']} not comment or blank) |")
    lines.append(f"| lines generated | — | {'+%d / −%d in %d files (%s)' % (rg['added'], rg['removed'], rg['files'], parts(rg)) if rg else '—'} |")
    hb, mb = sbs["hand_build"], sbs["migrated_build"]
    lines.append(f"| clean build wall / CPU (same machine, equal cores) | {_s(hb['wall_s'])} / {_s(hb['cpu_s'])} | "
                 f"{_s(mb['wall_s'])} / {_s(mb['cpu_s'])} |")
    lines.append(f"| `libtransformer_engine.so` | {_s(hb['so_bytes'], ' bytes')} | {_s(mb['so_bytes'], ' bytes')} |")
    lines.append(f"| CPU of `normalization/*` / `fused_softmax/*` steps | {_s(hb['normalization_cpu_s'])} / "
                 f"{_s(hb['fused_softmax_cpu_s'])} | {_s(mb['normalization_cpu_s'])} / {_s(mb['fused_softmax_cpu_s'])} |")
    lines += ["", "The hand column is TE's whole PR #3156 (`git diff --numstat "
              f"{TE_ORIGINAL} {TE_HAND}`, built with TE's defaults), which also moved the fused softmax kernels to "
              "NVRTC: its build time and `.so` size include that, the rule's do not (the `fused_softmax/*` row sets "
              "the softmax units' compile time apart); `normalization/` and the layer (`util/rtc.*`, `utils.cuh`) "
              "are the parts of its lines that compare with the rule.", "",
              "## Stages", "", "```", *r["stages"], "```", ""]
    if (r.get("pair") or {}).get("stages"):
        lines += ["Second session (pair):", "", "```", *r["pair"]["stages"], "```", ""]
    return "\n".join(lines)


def write_result(out: Path, result: dict, render) -> int:
    """OUT.json (sorted keys) and OUT.md (`render(result)`); 0."""
    out.with_suffix(".json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    out.with_suffix(".md").write_text(render(result))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("res", type=Path, help="the res/ folder of norm_results.tgz")
    ap.add_argument("--analysis", type=Path)
    ap.add_argument("--patch", type=Path)
    ap.add_argument("--hand-numstat", type=Path)
    ap.add_argument("--rule", type=Path, default=Path("rules/normalization.yaml"))
    ap.add_argument("--pair", type=Path, help="the res/ folder of a second session's `device_norm.sh pair`")
    ap.add_argument("--out", type=Path, default=Path("docs/results/te_norm_device"))
    ap.add_argument("--verify", type=Path, help="`codemod verify --json` of the migrated tree the device built")
    ap.add_argument("--add-pair-to", type=Path, metavar="JSON",
                    help="add RES (a pair session's res/) to this committed result and rewrite --out from it")
    args = ap.parse_args(argv)
    if args.add_pair_to:
        if not (args.res / "stages").is_file():
            print(f"te_norm_results: {args.res} holds no stages file (not a device_norm.sh res/ folder)", file=sys.stderr)
            return 2
        return write_result(args.out, add_pair(json.loads(args.add_pair_to.read_text()), args.res), render_markdown)
    if not (args.res / "stages").is_file():
        print(f"te_norm_results: {args.res} holds no stages file (not a device_norm.sh res/ folder)", file=sys.stderr)
        return 2
    result = collect(args.res, args.analysis, args.patch, args.hand_numstat, args.rule, args.pair)
    if args.verify:
        result["verify"] = verify_summary(json.loads(args.verify.read_text()))
    return write_result(args.out, result, render_markdown)


if __name__ == "__main__":
    sys.exit(main())
