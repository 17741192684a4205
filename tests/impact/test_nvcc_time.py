"""nvcc --time CSV: phases, host labels, appended and interleaved writers, failed compiles."""

from __future__ import annotations

import io

import pytest

from codemod.errors import ParseError
from codemod.impact import nvcc_time

from .conftest import GOLDEN


def parse(path):
    return nvcc_time.parse_path(str(path), path.name)


def test_one_tu_two_archs():
    invs, warns = parse(GOLDEN / "nvcc" / "one_tu.csv")
    assert warns == []
    (inv,) = invs
    assert (inv.pid, inv.source, inv.output, inv.complete, len(inv.rows)) == (0x1EF7, "k.cu", "k2.o", True, 11)
    ms = inv.phase_ms()
    assert ms["host_preprocess"] == pytest.approx(61.148)
    assert ms["device_preprocess"] == pytest.approx(67.874 + 65.346)
    assert ms["cicc"] == pytest.approx(218.232 + 189.049)
    assert ms["host_compile"] == pytest.approx(179.945)
    assert inv.arch_ms() == pytest.approx({"cicc compute_80": 218.232, "cicc compute_90": 189.049,
                                           "ptxas sm_80": 13.635, "ptxas sm_90": 13.539})


def test_four_interleaved_processes_attribute_all_32_rows():
    invs, warns = parse(GOLDEN / "nvcc" / "interleaved_4proc.csv")
    assert warns == []
    assert [(i.source, i.pid, i.output, len(i.rows), i.complete) for i in invs] == [
        ("a.cu", 0x3001, "obj/a.cu.o", 8, True),
        ("b.cu", 0x3002, "obj/b.cu.o", 8, True),
        ("c.cu", 0x3003, "obj/c.cu.o", 8, True),
        ("d.cu", 0x3004, "obj/d.cu.o", 8, True),
    ]
    # each process's rows carry its own scale factor k (see the golden file): all rows sum to 222.5 k
    for k, inv in enumerate(invs, start=1):
        assert all(r.source in (inv.source, "") for r in inv.rows)
        assert sum(inv.phase_ms().values()) == pytest.approx(222.5 * k)
        assert inv.phase_ms()["host_preprocess"] == pytest.approx(10 * k)  # -ccbin host label


def test_failed_compile_is_partial_with_warning():
    invs, warns = parse(GOLDEN / "nvcc" / "failed_compile.csv")
    assert [(i.source, i.complete) for i in invs] == [("a.cu", True), ("e.cu", False)]
    assert warns == ["failed_compile.csv:10: nvcc of e.cu has no driver row (failed or interrupted compile): "
                     "only its finished phases are counted"]


@pytest.mark.parametrize(
    "phase, kind",
    [("gcc (preprocessing 4)", "host_preprocess"), ("cl (preprocessing 1)", "device_preprocess"),
     ("x86_64-linux-gnu-g++-12 (compiling)", "host_compile"), ("clang++-18 (linking)", "host_link"),
     ("cudafe++", "cudafe"), ("nvlink", "nvlink"), ("nvcc (driver)", "driver"), ("something new", "other")],
)
def test_phase_kinds(phase, kind):
    assert nvcc_time.phase_kind(phase) == kind


def test_malformed_metric_names_line():
    text = "source file name , phase name , x , y , arch , tool, metric , unit\nk.cu , cicc , a , b , compute_90 , nvcc , fast , ms\n"
    with pytest.raises(ParseError, match=r"metric must be a number") as info:
        nvcc_time.parse(io.StringIO(text), "t.csv")
    assert info.value.where == "t.csv:2"


def test_too_few_fields_names_line():
    with pytest.raises(ParseError, match="expected 8 comma-separated fields, found 2") as info:
        nvcc_time.parse(io.StringIO("k.cu , cicc\n"), "t.csv")
    assert info.value.where == "t.csv:1"


def test_te_interleaved_csv_every_cuda_tu_gets_phases(at_repo):
    from codemod.impact.predict import load
    from .conftest import TE_CSV, TE_LOG

    loaded = load(TE_LOG, [TE_CSV])
    cuda = [s for s in loaded.steps if s.name.endswith(".cu.o")]
    assert len(cuda) == 78
    assert sorted(loaded.nvcc) == sorted(s.name for s in cuda)
    for s in cuda:
        inv = loaded.nvcc[s.name]
        assert inv.complete
        total = sum(inv.phase_ms().values())
        # at --threads 1 the phases run one after another: their sum is the step's elapsed time
        assert abs(total - s.elapsed_ms) / s.elapsed_ms < 0.01, s.name
    # the two CMake configure-time compiles are in the CSV but not in the build
    assert sorted(i.output for i in loaded.nvcc_unmatched) == ["CMakeFiles/cmTC_43913.dir/CMakeCUDACompilerABI.cu.o", "a.out"]
    gelu = loaded.nvcc["CMakeFiles/transformer_engine.dir/activation/gelu_grouped.cu.o"].phase_ms()
    assert (gelu["cicc"], gelu["ptxas"], gelu["host_compile"]) == (227500.2031, 243790.25, 79439.75)


def test_gzip_compressed_file_reads_like_the_plain_one(tmp_path):
    import gzip

    plain = GOLDEN / "nvcc" / "interleaved_4proc.csv"
    packed = tmp_path / "interleaved_4proc.csv.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = parse(plain), parse(packed)
    assert [(i.source, i.pid, i.phase_ms()) for i in a[0]] == [(i.source, i.pid, i.phase_ms()) for i in b[0]]
    broken = tmp_path / "broken.csv.gz"
    broken.write_bytes(b"not gzip at all\n")
    with pytest.raises(ParseError, match="cannot read nvcc --time file: Not a gzipped file"):
        parse(broken)
