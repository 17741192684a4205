"""scripts/te_norm_results.py on a hand-written res/ folder shaped like device_norm.sh's."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import te_norm_results as W  # noqa: E402

NINJA = {
    "original": [(0, 500000, "activation/gelu_grouped.cu"), (0, 200000, "normalization/layernorm/ln_fwd_cuda_kernel.cu"),
                 (200000, 300000, "normalization/rmsnorm/rmsnorm_fwd_cuda_kernel.cu")],
    "migrated": [(0, 500000, "activation/gelu_grouped.cu"), (0, 30000, "normalization/layernorm/ln_fwd_cuda_kernel.cu"),
                 (30000, 40000, "normalization/rtc/kernels.cpp")],
    "hand": [(0, 500000, "activation/gelu_grouped.cu"), (0, 50000, "normalization/layernorm/ln_fwd_cuda_kernel.cu"),
             (50000, 62000, "fused_softmax/scaled_masked_softmax.cu")],
}


def _xml(cases):
    body = "".join(f'<testcase name="{n}" classname="OperatorTest/NormTestSuite" status="run" result="{r}">'
                   + ("<failure message='x'/>" if f else "") + "</testcase>" for n, r, f in cases)
    return f'<?xml version="1.0"?><testsuites><testsuite name="OperatorTest/NormTestSuite">{body}</testsuite></testsuites>'


def _res(tmp_path: Path) -> Path:
    res = tmp_path / "res"
    res.mkdir()
    (res / "environment.txt").write_text("NVIDIA H200, 580.159.04, 143771 MiB\nCuda compilation tools, release 13.0, V13.0.88\n"
                                         "Build cuda_13.0.r13.0/compiler.36424714_0\n1.13.2\ncmake version 3.31.6\n"
                                         "nproc 16\n2026-12-02T09:00:00Z\n")
    (res / "cpus.txt").write_text("A 0,1,2,3,4,5,6,7\nB 8,9,10,11,12,13,14,15\n")
    (res / "stages").write_text("09:00:01 builds original(A) migrated(B)\n09:30:00 done status=0\n")
    for side, walls in (("original", 520.0), ("migrated", 505.5), ("hand", 510.25)):
        (res / f"build-{side}.json").write_text(json.dumps({
            "schema": "codemod-build/1", "side": side, "environment": {"commit": "abc1234"},
            "configure": {"wall_s": 12.5}, "build": {"wall_s": walls, "cpu_s": walls * 8}}))
        (res / f"parity-build-{side}.rc").write_text("0\n")
        (res / f"parity-build-{side}.cpus").write_text("8,9\n" if side != "original" else "0,1\n")
        rows = "".join(f"{a}\t{b}\t0\tCMakeFiles/transformer_engine.dir/{tu}.o\t{i:x}\n"
                       for i, (a, b, tu) in enumerate(sorted(NINJA[side], key=lambda x: x[1])))
        (res / f"{side}.ninja_log").write_text("# ninja log v5\n" + rows)
    (res / "so_size.txt").write_text("original 100\nmigrated 80\nhand 90\n")
    (res / "parity_norm.json").write_text(json.dumps({
        "parity": {"equal": 1224, "ran": 1224, "all_equal": True, "bytes_compared": 99, "rejected_by_both": 0,
                   "seconds": {"original": 10.0, "migrated": 60.0}, "shards": 16},
        "mismatch_count": 0, "seed": 7, "combinations": [{"entry": "nvte_layernorm_fwd"}, {"entry": "nvte_rmsnorm_fwd"}]}))
    (res / "tests-original-0.xml").write_text(_xml([("a", "completed", False), ("b", "skipped", False)]))
    (res / "tests-original-1.xml").write_text(_xml([("c", "completed", False)]))
    (res / "tests-migrated-0.xml").write_text(_xml([("a", "completed", False), ("b", "skipped", False)]))
    (res / "tests-migrated-1.xml").write_text(_xml([("c", "completed", True)]))
    (res / "tests.status").write_text("original shards=2 rc=0 wall_s=40\nmigrated shards=2 rc=1 wall_s=70\n")
    (res / "tests-original.ldd").write_text("\tlibtransformer_engine.so => /w/build-original/libtransformer_engine.so (0x1)\n")
    (res / "tests-build.log").write_text("[40/40] Linking\nconfigure_s=9 build_s=181\n")
    return res


def test_results_from_a_device_run(tmp_path):
    res = _res(tmp_path)
    patch = tmp_path / "mig.patch"
    patch.write_text("diff --git a/transformer_engine/common/utils.cuh b/transformer_engine/common/utils.cuh\n"
                     "--- a/transformer_engine/common/utils.cuh\n+++ b/transformer_engine/common/utils.cuh\n"
                     "@@ -1 +1,2 @@\n-old\n+new\n+more\n"
                     "diff --git a/transformer_engine/common/normalization/rtc/kernels.cpp "
                     "b/transformer_engine/common/normalization/rtc/kernels.cpp\nnew file mode 100644\n"
                     "--- /dev/null\n+++ b/transformer_engine/common/normalization/rtc/kernels.cpp\n@@ -0,0 +1 @@\n+x\n")
    numstat = tmp_path / "hand.numstat"
    numstat.write_text("742\t0\ttransformer_engine/common/normalization/rtc_dispatch.cpp\n"
                       "35\t4\ttransformer_engine/common/utils.cuh\n-\t-\tsome.png\n")
    analysis = tmp_path / "a.json"
    analysis.write_text(json.dumps({"totals": {"kernels": 12, "instantiations": 701}}))
    out = tmp_path / "te_norm_device"
    rc = W.main([str(res), "--analysis", str(analysis), "--patch", str(patch), "--hand-numstat", str(numstat),
                 "--rule", str(ROOT / "rules" / "normalization.yaml"), "--out", str(out)])
    assert rc == 0
    r = json.loads(out.with_suffix(".json").read_text())
    assert r["machine"]["gpu"] == "NVIDIA H200" and r["machine"]["driver"] == "580.159.04"
    assert r["machine"]["ninja"] == "1.13.2" and r["machine"]["cpus_b"] == "8,9,10,11,12,13,14,15"
    assert r["date"] == "2026-12-02T09:00:00Z" and r["codemod_commit"] == "abc1234"
    o, m = r["builds"]["original"], r["builds"]["migrated"]
    assert o["normalization_cpu_s"] == 300.0 and m["normalization_cpu_s"] == 40.0 and o["steps"] == 3
    assert o["longest"][0] == {"step": "activation/gelu_grouped.cu", "start_s": 0.0, "elapsed_s": 500.0}
    assert r["builds"]["hand"]["so_bytes"] == 90 and r["builds"]["hand"]["fused_softmax_cpu_s"] == 12.0
    assert r["parity"]["equal"] == 1224 and r["parity"]["entry_points"] == ["nvte_layernorm_fwd", "nvte_rmsnorm_fwd"]
    t = r["tests"]
    assert t["sides"]["original"]["tests"] == 3 and t["sides"]["original"]["skipped"] == 1
    assert t["sides"]["migrated"]["failed"] == 1 and t["sides"]["migrated"]["rc"] == "1"
    assert t["outcome_differences"] == ["OperatorTest/NormTestSuite.c: passed -> failed"]
    assert t["build"] == {"configure_s": 9, "build_s": 181}
    sbs = r["side_by_side"]
    assert sbs["rule_generated"]["by_part"] == {"normalization/": [1, 0], "utils.cuh": [2, 1]}
    assert sbs["hand_written"]["added"] == 777 and sbs["hand_written"]["files"] == 2
    assert sbs["kernels"] == 12 and sbs["instantiations"] == 701
    md = out.with_suffix(".md").read_text()
    assert "**1224 of 1224 cases byte-equal**" in md and "| build wall | 520.0 s | 505.5 s | 510.2 s |" in md
    assert "Tests whose outcome differs between the two libraries: **1**" in md


def test_a_folder_without_stages_is_refused(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "te_norm_results.py"), str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "no stages file" in r.stderr


def test_a_second_sessions_pair_fills_the_side_by_side(tmp_path):
    res = _res(tmp_path)
    for side in ("hand",):
        for f in res.glob(f"*{side}*"):
            f.unlink()
    (res / "so_size.txt").write_text("original 100\nmigrated 80\n")
    pair = tmp_path / "pair"
    pair.mkdir()
    (pair / "environment.txt").write_text("NVIDIA H200, 580.159.04, 143771 MiB\nnproc 16\n2026-12-03T09:00:00Z\n")
    (pair / "stages").write_text("09:00 builds migrated(A) hand(B)\n")
    for side, wall in (("migrated", 700.0), ("hand", 690.0)):
        (pair / f"build-{side}.json").write_text(json.dumps({"build": {"wall_s": wall, "cpu_s": wall * 7},
                                                             "environment": {"commit": "abc1234"}}))
        (pair / f"parity-build-{side}.rc").write_text("0\n")
    (pair / "so_size.txt").write_text("migrated 81\nhand 91\n")
    out = tmp_path / "r"
    assert W.main([str(res), "--pair", str(pair), "--rule", str(ROOT / "rules" / "normalization.yaml"),
                   "--out", str(out)]) == 0
    r = json.loads(out.with_suffix(".json").read_text())
    assert r["builds"]["hand"] is None and r["pair"]["machine"]["date"] == "2026-12-03T09:00:00Z"
    assert r["side_by_side"]["hand_build"]["wall_s"] == 690.0 and r["side_by_side"]["migrated_build"]["so_bytes"] == 81
    md = out.with_suffix(".md").read_text()
    assert "## Rule vs hand, built at the same time (second session)" in md and "| build wall | 700.0 s | 690.0 s |" in md


def _pair(tmp_path: Path) -> Path:
    pair = tmp_path / "pair"
    pair.mkdir()
    (pair / "environment.txt").write_text("NVIDIA H200, 580.159.04, 143771 MiB\nnproc 16\n2026-12-03T09:00:00Z\n")
    (pair / "stages").write_text("09:00 builds migrated(A) hand(B)\n")
    for side, wall in (("migrated", 700.0), ("hand", 690.0)):
        (pair / f"build-{side}.json").write_text(json.dumps({"build": {"wall_s": wall, "cpu_s": wall * 7},
                                                             "environment": {"commit": "abc1234"}}))
        (pair / f"parity-build-{side}.rc").write_text("0\n")
    (pair / "so_size.txt").write_text("migrated 81\nhand 91\n")
    return pair


def test_a_pair_is_added_to_a_committed_result_keeping_its_first_session(tmp_path):
    """--add-pair-to: the first session's res/ is gone, its committed JSON stays; the pair fills the
    side by side and the first session's builds, parity and tests are kept as they were."""
    res = _res(tmp_path)
    for f in res.glob("*hand*"):
        f.unlink()
    first = tmp_path / "first"
    assert W.main([str(res), "--rule", str(ROOT / "rules" / "normalization.yaml"), "--out", str(first)]) == 0
    before = json.loads(first.with_suffix(".json").read_text())
    assert before["side_by_side"]["hand_build"]["wall_s"] is None
    out = tmp_path / "r"
    assert W.main([str(_pair(tmp_path)), "--add-pair-to", str(first.with_suffix(".json")), "--out", str(out)]) == 0
    r = json.loads(out.with_suffix(".json").read_text())
    assert r["side_by_side"]["hand_build"]["wall_s"] == 690.0 and r["side_by_side"]["migrated_build"]["so_bytes"] == 81
    assert r["pair"]["stages"] == ["09:00 builds migrated(A) hand(B)"]
    assert {k: r[k] for k in ("builds", "parity", "tests", "stages")} == \
        {k: before[k] for k in ("builds", "parity", "tests", "stages")}
    md = out.with_suffix(".md").read_text()
    assert "| build wall | 700.0 s | 690.0 s |" in md and "Second session (pair):" in md


def test_adding_a_pair_without_its_stages_is_refused(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    assert W.main([str(tmp_path), "--add-pair-to", str(tmp_path / "x.json")]) == 2


def test_skip_reasons_drop_the_location_and_name_a_bare_skip_by_its_line(tmp_path: Path):
    xml = ('<?xml version="1.0"?><testsuites><testsuite name="S">'
           '<testcase name="TestNorm/TeRmsNorm_a" classname="S" result="completed"/>'
           '<testcase name="TestNorm/CudnnRmsNorm_b" classname="S" result="completed"/>'
           '<testcase name="c" classname="S" result="skipped"><skipped message="/x/test_normalization.cu:33&#x0A;'
           'LN kernel does not support OutputType &gt; InputType&#x0A;"/></testcase>'
           '<testcase name="d" classname="S" result="skipped"><skipped message="/x/test_normalization_mxfp8.cu:111&#x0A;"/>'
           '</testcase></testsuite></testsuites>')
    (tmp_path / "tests-original-0.xml").write_text(xml)
    (tmp_path / "stages").write_text("19:32:32 tests build started, linked against the migrated library (8,9)\n")
    t = W.tests_summary(tmp_path)
    assert t["sides"]["original"]["skip_reasons"] == {"LN kernel does not support OutputType > InputType": 1,
                                                     "test_normalization_mxfp8.cu:111 (no message)": 1}
    assert t["sides"]["original"]["passed_by_backend"] == {"CudnnRmsNorm": 1, "TeRmsNorm": 1}
    assert t["linked_against"] == "migrated"


def test_verify_summary_counts_the_first_archs_variants_and_every_program():
    v = {"ok": True, "kernels": 2, "variants_total": 5, "archs": ["sm_90", "sm_100a"], "nvrtc_version": "13.0",
         "seconds": 3.0, "jobs": 1, "host": {"status": "skipped"},
         "programs": [{"arch": "sm_90", "variants": 3, "ok": True}, {"arch": "sm_100a", "variants": 3, "ok": True},
                      {"arch": "sm_90", "variants": 1, "ok": False}]}
    s = W.verify_summary(v)
    assert s["variants_compiled"] == 4 and s["programs"] == 3 and s["programs_ok"] == 2 and s["host"] == "skipped"
