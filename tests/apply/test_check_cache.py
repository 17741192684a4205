"""apply's NVRTC precheck and its re-parse of the rule's units as migrated are cached by content
(check_cache.py): a second dry run on an unchanged tree compiles and parses nothing; a header whose
content changes is compiled (or parsed) again, and only where it is included."""

from __future__ import annotations

import shutil
import stat

import pytest

from codemod.apply.golden import GOLDEN
from codemod.cli import main

RULE = str(GOLDEN / "actlib" / "activation.yaml")


def _nvrtc_available() -> bool:
    from codemod.verify import nvrtc

    try:
        nvrtc.load()
    except nvrtc.NvrtcNotFound:
        return False
    return True


pytestmark = pytest.mark.skipif(not _nvrtc_available(), reason="needs NVRTC (the nvidia-cuda-nvrtc wheel)")


@pytest.fixture
def counted(tmp_path, monkeypatch):
    """A private cache dir, and counts of NVRTC compiles (program names) and of the re-parses of
    units as migrated (libclang parses given the migration's unsaved files: the analysis' own
    parses pass none)."""
    import clang.cindex as ci

    from codemod.verify import nvrtc

    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    calls = {"nvrtc": [], "parse": []}
    compile_, parse = nvrtc.Nvrtc.compile, ci.Index.parse

    def counting_compile(self, source, name, *args, **kwargs):
        calls["nvrtc"].append(name)
        return compile_(self, source, name, *args, **kwargs)

    def counting_parse(self, path, *args, **kwargs):
        if kwargs.get("unsaved_files"):
            calls["parse"].append(path)
        return parse(self, path, *args, **kwargs)

    monkeypatch.setattr(nvrtc.Nvrtc, "compile", counting_compile)
    monkeypatch.setattr(ci.Index, "parse", counting_parse)
    return calls


def _dry_run(root, out, capsys) -> str:
    assert main(["apply", "--target", RULE, str(root), "--diff", str(out)]) == 0
    return capsys.readouterr().err


@pytest.mark.slow   # three applies with the real NVRTC precheck (13 s)
def test_a_second_dry_run_compiles_and_parses_nothing_and_a_changed_header_misses(tmp_path, counted, capsys):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    first = _dry_run(root, tmp_path / "first.diff", capsys)
    compiled, parsed = list(counted["nvrtc"]), list(counted["parse"])
    assert compiled and parsed, (compiled, parsed)
    assert "0 passed before with the same inputs (cache)" in first
    assert f"precheck [{len(compiled)}/{len(compiled)}]" in first
    assert f"parse as migrated [{len(parsed)}/{len(parsed)}]" in first
    assert "apply: planning [1/" in first and "apply: generating the migration of" in first

    counted["nvrtc"].clear(), counted["parse"].clear()
    second = _dry_run(root, tmp_path / "second.diff", capsys)
    assert counted["nvrtc"] == [] and counted["parse"] == []
    assert f"{len(compiled)} passed before with the same inputs (cache), 0 to compile" in second
    assert f"{len(parsed)} parsed clean before with the same inputs (cache), 0 to parse" in second
    assert (tmp_path / "second.diff").read_bytes() == (tmp_path / "first.diff").read_bytes()

    # a header only cast.cu includes (the kernel strings do not): one unit parsed again, no compile
    cast_h = root / "include" / "actlib" / "cast.h"
    cast_h.write_text(cast_h.read_text() + "// edited\n")
    counted["nvrtc"].clear(), counted["parse"].clear()
    _dry_run(root, tmp_path / "third.diff", capsys)
    assert counted["nvrtc"] == []
    assert [p.rsplit("/", 2)[-2:] for p in counted["parse"]] == [["cast", "cast.cu"]]

    # a header the kernel strings include (util/math.h): compiled again, and every unit including it parsed
    math_h = root / "util" / "math.h"
    math_h.write_text(math_h.read_text() + "// edited\n")
    counted["nvrtc"].clear(), counted["parse"].clear()
    _dry_run(root, tmp_path / "fourth.diff", capsys)
    assert counted["nvrtc"], "a kernel string's header changed: its program must be compiled again"
    assert len(counted["nvrtc"]) <= len(compiled)
    assert any(p.endswith("activation/gelu.cu") for p in counted["parse"])


@pytest.mark.slow
def test_the_cache_folders_are_private(tmp_path, counted, capsys):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    _dry_run(root, tmp_path / "p.diff", capsys)
    for kind in ("precheck", "kernels-h-parse", "parse", "analysis"):
        folder = tmp_path / "cache" / kind
        assert any(folder.glob("*.json")), kind
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, kind
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    assert not any(p.name in ("precheck", "kernels-h-parse") for p in root.rglob("*"))


@pytest.mark.slow
def test_quiet_prints_no_progress(tmp_path, counted, capsys):
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    assert main(["apply", "--target", RULE, str(root), "--diff", str(tmp_path / "q.diff"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "precheck" not in err and "parse as migrated" not in err and "apply: planning" not in err


@pytest.mark.slow
def test_an_edit_no_unit_includes_keeps_the_entries(tmp_path, counted, capsys):
    """--build-log adds a CMake edit to the migration: no unit includes the CMake file, so neither
    the kernel strings nor the units' parses change, and nothing is compiled or parsed again."""
    from tests.apply.test_build_order import BUILD, _ninja_log, _nvcc_csv

    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "actlib" / "input", root)
    _dry_run(root, tmp_path / "first.diff", capsys)
    log, csv = tmp_path / "actlib.ninja_log", tmp_path / "actlib.csv"
    log.write_text(_ninja_log(BUILD))
    csv.write_text(_nvcc_csv(BUILD))
    counted["nvrtc"].clear(), counted["parse"].clear()
    out = tmp_path / "ordered.diff"
    assert main(["apply", "--target", RULE, str(root), "--diff", str(out), "--build-log", str(log),
                 "--nvcc-time", str(csv)]) == 0
    capsys.readouterr()
    assert "actlib_longest_sources" in out.read_text()          # the migration differs: CMakeLists.txt
    assert counted["nvrtc"] == [] and counted["parse"] == []
