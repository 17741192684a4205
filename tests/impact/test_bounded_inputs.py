"""Issue 33: the impact inputs are bounded in memory and time. A `build.ninja` whose variables
double (41 lines -> 2^40 bytes), a `.ninja_log.gz` of tens of millions of lines from a small file,
a gzip of NULs (one endless line): each is one ParseError naming the file and the limit, reached
after bounded work (peak Python memory measured with tracemalloc, no timing assertions).

The gzip inputs are built as repeated gzip members (a valid multi-member file): megabytes on
disk, gigabytes decompressed, made in milliseconds."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest

from codemod.cli import main
from codemod.errors import ParseError
from codemod.impact import build_ninja, logfile, ninja_log, nvcc_time

GOLDEN_LOG = Path(__file__).resolve().parents[2] / "golden" / "impact" / "logs" / "v6_one_build.ninja_log"
PEAK_LIMIT = 64 << 20  # bytes of Python allocations while refusing (the issue: 4.2 to 21.5 GB)


def peak_of(fn):
    """(exception raised by fn, peak traced bytes)."""
    tracemalloc.start()
    try:
        fn()
    except ParseError as exc:
        return exc, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    raise AssertionError("no ParseError")


def doubling_manifest(tmp_path: Path, n: int = 40) -> Path:
    lines = ["rule cc", "  command = cc $in", "v0 = xxxxxxxx"]
    lines += [f"v{k} = $v{k - 1}$v{k - 1}" for k in range(1, n + 1)]
    path = tmp_path / "build.ninja"
    path.write_text("\n".join(lines[:41]) + "\n")
    return path


def many_lines_gz(tmp_path: Path, members: int = 90) -> Path:
    member = gzip.compress(b"0\t1\t0\tobj/a.o\tff\n" * 700_000)   # 700k lines, ~30 KB compressed
    path = tmp_path / "huge.ninja_log.gz"
    path.write_bytes(gzip.compress(b"# ninja log v6\n") + member * members)   # 63M lines
    return path


def nuls_gz(tmp_path: Path, members: int = 100) -> Path:
    member = gzip.compress(b"\0" * (20 << 20))                      # 20 MiB of NULs, ~20 KB compressed
    path = tmp_path / "nuls.ninja_log.gz"
    path.write_bytes(member * members)                              # 2 GiB, no newline
    return path


def test_doubling_variable_refused(tmp_path):
    path = doubling_manifest(tmp_path)
    exc, peak = peak_of(lambda: build_ninja.parse_path(str(path), str(path)))
    assert "expands to more than" in exc.render() and str(path) in exc.render()
    assert peak < PEAK_LIMIT, peak


def test_doubling_variable_in_a_build_binding_refused(tmp_path):
    text = "rule cc\n  command = cc $in\nv0 = xxxxxxxxxxxxxxxx\n" + "".join(
        f"v{k} = $v{k - 1}$v{k - 1}\n" for k in range(1, 17)) + "build a.o: cc a.c\n  x = " + "$v16" * 64 + "\n"
    path = tmp_path / "build.ninja"
    path.write_text(text)
    exc, peak = peak_of(lambda: build_ninja.parse_path(str(path), str(path)))
    assert "expands to more than" in exc.render()
    assert peak < PEAK_LIMIT, peak


def test_doubling_variable_through_the_cli(tmp_path, capsys):
    path = doubling_manifest(tmp_path)
    code = main(["impact", str(GOLDEN_LOG), "--build-ninja", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("codemod: error: ") and err.count("\n") == 1, err
    assert "build.ninja" in err and "MiB" in err


@pytest.mark.slow
def test_many_lines_gz_refused(tmp_path):
    path = many_lines_gz(tmp_path)
    assert path.stat().st_size < 4 << 20
    exc, peak = peak_of(lambda: ninja_log.parse_path(str(path)))
    assert str(path) in exc.render() and f"{logfile.MAX_LINES:,}" in exc.render(), exc.render()
    assert peak < PEAK_LIMIT, peak


def test_nuls_gz_refused(tmp_path):
    path = nuls_gz(tmp_path)
    exc, peak = peak_of(lambda: ninja_log.parse_path(str(path)))
    assert str(path) in exc.render() and "longer than" in exc.render(), exc.render()
    assert peak < PEAK_LIMIT, peak


def test_decompressed_size_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(logfile, "MAX_BYTES", 1 << 20)
    path = tmp_path / "big.csv.gz"
    path.write_bytes(gzip.compress(b"a , b , c , d , e , nvcc , 1.0 , ms\n" * 100_000))
    exc, _ = peak_of(lambda: nvcc_time.parse_path(str(path)))
    assert "larger than 1 MiB" in exc.render() and str(path) in exc.render()


def test_long_line_in_a_plain_log_refused(tmp_path):
    path = tmp_path / "long.ninja_log"
    path.write_bytes(b"# ninja log v6\n0\t1\t0\t" + b"a" * (logfile.MAX_LINE_BYTES + 10) + b"\tff\n")
    exc, peak = peak_of(lambda: ninja_log.parse_path(str(path)))
    assert "longer than" in exc.render() and str(path) in exc.render()


def test_gz_through_the_cli_is_one_line(tmp_path, capsys):
    path = nuls_gz(tmp_path, members=10)
    code = main(["impact", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("codemod: error: ") and err.count("\n") == 1, err
    assert str(path) in err


def test_a_normal_gz_log_still_reads(tmp_path):
    path = tmp_path / "ok.ninja_log.gz"
    path.write_bytes(gzip.compress(Path(GOLDEN_LOG).read_bytes()))
    got, want = ninja_log.parse_path(str(path)), ninja_log.parse_path(str(GOLDEN_LOG))
    assert len(got.builds) == len(want.builds) == 1
    assert [s.name for s in got.build(0).cycles[0].steps()] == [s.name for s in want.build(0).cycles[0].steps()]


@pytest.mark.parametrize("text", ["a = $b\n", "a = x\nb = ${a}${a}\n"])
def test_small_expansions_unchanged(tmp_path, text):
    path = tmp_path / "build.ninja"
    path.write_text("rule cc\n  command = cc $in\n" + text + "build o: cc $a\n")
    m = build_ninja.parse_path(str(path))
    assert len(m.edges) == 1
