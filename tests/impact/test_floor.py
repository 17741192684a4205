"""`codemod impact --floor`: the wall once every CUDA step has lost its device phases, except the
steps kept as recorded (cuDNN frontend graphs, CUTLASS/CuTe kernels), and what those are worth."""

from __future__ import annotations

import json

import pytest

from codemod.cli import main
from codemod.impact.floor import floor_document, floor_what_if, parse_keep
from codemod.impact.predict import load, predict

from .conftest import TE_CSV, TE_LOG

# What stays static in TE d0067d0 (docs/results/te_transpose_rule.md): units without kernels whose
# device time is cicc parsing cudnn_frontend.h, and the CUTLASS/CuTe units.
TE_KEEP = ["fused_attn/fused_attn_fp8.cu=cuDNN frontend", "fused_attn/fused_attn_f16_arbitrary_seqlen.cu=cuDNN frontend",
           "fused_attn/utils.cu=cuDNN frontend", "normalization/*_kernel.cu=cuDNN frontend",
           "gemm/cutlass_grouped_gemm.cu=CUTLASS", "hadamard_transform/*cast_fusion.cu=CUTLASS"]


def _synthetic(tmp_path):
    """Two CUDA steps on -j2 and a link: a.cu 10 s (host 2, device 8), b.cu 6 s (host 3, device 3)."""
    log = tmp_path / "b.ninja_log"
    log.write_text("# ninja log v7\n0\t6000\t0\tb.cu.o\t2b\n0\t10000\t0\ta.cu.o\t1a\n10000\t10500\t0\tlib.so\t3c\n")
    rows = ["source file name , phase name , phase input files , phase output file , arch , tool, metric , unit"]
    for src, pid, host, cicc in (("a.cu", "0000000a", 2000, 8000), ("b.cu", "0000000b", 3000, 3000)):
        rows += [f"{src} , cudafe++ , tmp/tmpxft_{pid}_00000000-5_{src}.cpp4.ii , tmp/tmpxft_{pid}_00000000-6_x.cpp , "
                 f"compute_90 , nvcc , {host / 2} , ms",
                 f"{src} , cicc , tmp/tmpxft_{pid}_00000000-7_{src}.cpp1.ii , tmp/tmpxft_{pid}_00000000-6_x.ptx , "
                 f"compute_90 , nvcc , {cicc} , ms",
                 f"{src} , g++ (compiling) ,  , {src}.o , compute_90 , nvcc , {host / 2} , ms",
                 f" , nvcc (driver) ,  , {src}.o ,  , nvcc , 1 , ms"]
    csv = tmp_path / "t.csv"
    csv.write_text("\n".join(rows) + "\n")
    return str(log), str(csv)


def test_floor_keeps_host_phases_and_the_kept_steps(tmp_path):
    log, csv = _synthetic(tmp_path)
    loaded = load(log, [csv])
    floor = floor_what_if(loaded, [])
    assert floor.what_if["scale"] == {"a.cu.o": pytest.approx(0.2), "b.cu.o": pytest.approx(0.5)}
    doc = floor_document(loaded, [])
    # a.cu 2 s and b.cu 3 s run side by side; the link follows the last one
    assert doc["floor_wall_s"] == pytest.approx(3.5, abs=0.01)
    kept = floor_document(loaded, parse_keep(["b.cu=stays"]))
    assert kept["floor_wall_s"] == pytest.approx(6.5, abs=0.01)
    assert kept["bound_wall_s"] == pytest.approx(3.5, abs=0.01)
    assert kept["kept_worth_wall_s"] == pytest.approx(3.0, abs=0.01)
    assert kept["kept"] == [{"reason": "stays", "steps": 1, "cpu_s": 6.0}]


def test_floor_is_one_prediction(at_repo):
    """The floor's wall is predict()'s on the floor's what-if: the same number any command prints."""
    loaded = load(TE_LOG, [TE_CSV])
    keep = parse_keep(TE_KEEP)
    doc = floor_document(loaded, keep)
    again = predict(loaded, floor_what_if(loaded, keep).what_if)
    assert doc["floor_wall_s"] == again["predicted_wall_s"]
    assert doc["bound_wall_s"] < doc["floor_wall_s"] < doc["replayed_wall_s"]
    # the kept units: 3 fused attention, 4 normalization, 1 CUTLASS grouped GEMM, 5 Hadamard
    assert sum(r["steps"] for r in doc["kept"]) == 13
    assert doc["floor_critical_step"].endswith("fused_attn/fused_attn_fp8.cu.o")


def test_cli_floor_json_and_refusals(at_repo, tmp_path, capsys):
    out = tmp_path / "floor.json"
    args = ["impact", TE_LOG, "--nvcc-time", TE_CSV, "--floor", "--json", str(out)]
    assert main(args + [a for k in TE_KEEP for a in ("--keep", k)]) == 0
    doc = json.loads(out.read_text())
    assert doc["floor_wall_s"] == floor_document(load(TE_LOG, [TE_CSV]), parse_keep(TE_KEEP))["floor_wall_s"]
    text = capsys.readouterr().out
    assert "floor (floor: the device phases of" in text and "what stays costs" in text
    assert main(["impact", TE_LOG, "--floor"]) == 2                                  # no nvcc data
    assert main(["impact", TE_LOG, "--nvcc-time", TE_CSV, "--keep", "x=y"]) == 2     # --keep without --floor
    assert main(args + ["--keep", "no/such/*.cu=typo"]) == 2                         # a keep that matches nothing
    assert main(args + ["--keep", "gemm/*.cu"]) == 2                                 # no reason
    assert main(args + ["--remove", "activation/*.cu"]) == 2                         # another what-if
    err = capsys.readouterr().err
    assert "--keep matches no step: 'no/such/*.cu'" in err and "--keep wants GLOB=REASON" in err
