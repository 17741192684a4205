"""The benchmarks compile a kernel's program with the options verify and the stubs use (a program
whose header needs a build define did not compile under them: NVTE_BUILD_NUM_PHILOX_ROUNDS)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codemod.verify import programs
from codemod.verify.manifest import load_manifest
from tests.verify.conftest import migrated_golden

ROOT = Path(__file__).resolve().parents[2]
BUILDLIB = ROOT / "golden" / "buildlib"


def test_program_options_are_verifys_with_the_build_defines(tmp_path):
    root = migrated_golden("buildlib", "quant", tmp_path / "buildlib")
    m = load_manifest(BUILDLIB / "expected" / "apply.manifest.json", root)
    k = next(k for k in m.kernels if k.id == "buildlib::quant::round_kernel")
    opts = programs.program_options(k, cuda_version=["-DCUDA_VERSION=13000"])
    assert opts[:len(k.nvrtc_options)] == list(k.nvrtc_options)
    assert "-DCUDA_VERSION=13000" in opts and "-DBUILDLIB_NUM_PASSES=2" in opts      # the header's default
    assert "-DBUILDLIB_NUM_PASSES=5" in programs.program_options(k, build_values={"BUILDLIB_NUM_PASSES": "5"},
                                                                 cuda_version=[])
    planned = programs.plan([m], ["sm_90"], only=[k.id])
    assert planned and all(p.options == programs.program_options(k, cuda_version=programs.cuda_version_options())
                           for p in planned if p.config == "default")


@pytest.mark.parametrize("script", ["nvrtc_cold.py", "rtc_cache_h200.py", "first_use_nvrtc.py", "program_headers.py"])
def test_bench_script_loads(script):
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / script), "--help"], capture_output=True, text=True,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_first_use_bench_reads_a_manifest_kept_outside_the_tree(tmp_path):
    """`apply --write` keeps the manifest in the git folder; the bench read its paths against the
    manifest's own folder and failed ("file named by the manifest cannot be read")."""
    from tests.verify.conftest import _nvrtc_or_skip

    _nvrtc_or_skip()
    root = migrated_golden("buildlib", "quant", tmp_path / "buildlib")
    label = f"pytest_{tmp_path.name}"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "first_use_nvrtc.py"), str(root), "--reps", "1",
                           "--label", label, "--define", "NDEBUG=1"], capture_output=True, text=True, cwd=ROOT)
    try:
        assert proc.returncode == 0, proc.stderr[-2000:]
        doc = (ROOT / "bench" / "results" / f"first_use_nvrtc_{label}.json").read_text()
        assert '"NDEBUG": "1"' in doc and "buildlib::quant::round_kernel" in doc
    finally:
        for suffix in (".json", ".txt"):
            (ROOT / "bench" / "results" / f"first_use_nvrtc_{label}{suffix}").unlink(missing_ok=True)


def test_rtc_cache_bench_records_where_it_ran():
    """The bench's JSON and markdown carry the GPU and driver, nvcc, the CPUs the (possibly pinned)
    run could use and the codemod commit: they were added by hand to a device result before."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rtc_cache_h200", ROOT / "bench" / "rtc_cache_h200.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    env = bench.environment(commit="abc1234")
    assert env["commit"] == "abc1234" and env["cpus_usable"] >= 1 and "gpu" in env
    doc = {"label": "t", "date": "2026-12-02", "host": "h", "cpus": 16, "nvrtc": "13.0", "arch": "sm_90",
           "combinations": [], "environment": {**env, "gpu": "NVIDIA H200, 580.159.04, 143771 MiB", "cpus": 16,
                                               "cpus_usable": 4}}
    text = bench._markdown(doc)
    assert "GPU: NVIDIA H200, 580.159.04, 143771 MiB;" in text and "4 of 16 CPUs usable; codemod abc1234." in text


def _bench_module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cold_bench_measures_the_options_the_layer_adds():
    """The benches' `layer` arm is the layer's full option set in its order (codemod warm's
    LAYER_OPTIONS: the PCH options, then -minimal), labelled with them; the PCH options alone only
    with --pch-arm; --candidate replaces the layer's arm (then named `candidate`)."""
    from codemod import nvrtc_options as warm

    cold = _bench_module("nvrtc_cold")
    assert cold.arms() == {"baseline": [], "layer": list(warm.LAYER_OPTIONS)} and "-minimal" in warm.LAYER_OPTIONS
    assert cold.arms(pch_arm=True)["pch"] == list(warm.PCH_OPTIONS)
    assert cold.arms(["-foo"]) == {"baseline": [], "candidate": ["-foo"]}
    bench = _bench_module("rtc_cache_h200")
    doc = {"label": "t", "date": "2026-12-02", "host": "h", "cpus": 2, "nvrtc": "13.0", "arch": "sm_90",
           "combinations": [], "breakdown": {"baseline_cpu_ms_median": 113.6, "layer_options": list(warm.LAYER_OPTIONS),
                                             "layer_cpu_ms_median": 95.6, "pch_cpu_ms_median": 104.0,
                                             "headers_only_cpu_ms_median": 50.0, "module_load_ms_median": 0.5}}
    text = bench._markdown(doc)
    assert f"layer `{' '.join(warm.LAYER_OPTIONS)}` | 113.6 / 95.6 ms |" in text
    assert "the PCH options alone | 104.0 ms |" in text


def test_cold_bench_identity_tells_a_candidate_that_did_not_compile_from_one_that_differs(monkeypatch):
    """A candidate option NVRTC refuses gives no cubin: the report says so with the error, and lists
    as differing only the variants both arms compiled."""
    cold = _bench_module("nvrtc_cold")
    runs = {"id_baseline": [{"kernel": "k", "variant": v, "ok": True, "cubin_sha256": v, "cubin_bytes": 8, "pch": []}
                            for v in ("a", "b")],
            "id_candidate": [{"kernel": "k", "variant": "a", "ok": False, "cubin_sha256": "", "cubin_bytes": 0,
                              "pch": [], "error": "nvrtc: error: invalid option -Ofast-compile=min"},
                             {"kernel": "k", "variant": "b", "ok": True, "cubin_sha256": "other", "cubin_bytes": 9,
                              "pch": []}]}
    monkeypatch.setattr(cold, "run_worker", lambda work, name, *a, **k: [None] + runs[name])
    args = type("A", (), {"patched": None, "arch": "sm_90", "extra": []})()
    ident = cold.identity(args, None, [(None, "k", 0), (None, "k", 1)], ["-Ofast-compile=min"])
    assert ident["candidate_failed"] == 1 and "invalid option" in ident["candidate_error"]
    text = cold.markdown({"label": "t", "date": "d", "commit": "c", "host": "h", "cpus": 2, "arch": "sm_90",
                          "nvrtc": "13.0", "reps": 1, "extra": [], "load_before": [0], "load_after": [0],
                          "identity": ident})
    assert "1 of them did not compile with the candidate's options (first error: `nvrtc: error: invalid option" in text
    assert "- differs: `b`" in text and "- differs: `a`" not in text
