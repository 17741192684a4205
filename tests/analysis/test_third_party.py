"""Whole-library analyze: clang errors inside headers outside the library root (cuDNN, NCCL, CCCL
in TE's case) are summarised once per include dir (CM0103) and do not make the result an error;
the library's own errors still do."""

from __future__ import annotations

import json
from pathlib import Path

from codemod.cli import main

KERNEL = """#include <broken/broken.h>
template <int N> __global__ void k(float* x) { x[0] = N; }
void run(float* x) { k<1><<<1, 1>>>(x); }
"""


def _library(tmp_path: Path, own_error: bool = False) -> tuple[Path, Path]:
    """lib/ (one TU, optionally with an error of its own) including a broken header from ext/include."""
    ext = tmp_path / "ext" / "include" / "broken"
    ext.mkdir(parents=True)
    (ext / "broken.h").write_text("#pragma once\n#include <cudnn_like.h>\nunknown_type_t broken_value;\n"
                                  "inline int broken_fn() { return not_declared_anywhere; }\n")
    (ext / "more.h").write_text("#pragma once\nstill_unknown_t more_value;\n")
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "k.cu").write_text(KERNEL.replace("#include <broken/broken.h>\n",
                                             "#include <broken/broken.h>\n#include <broken/more.h>\n")
                              + ("int own = library_typo;\n" if own_error else ""))
    db = lib / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(lib), "file": str(lib / "k.cu"),
                               "arguments": ["nvcc", f"-I{tmp_path / 'ext' / 'include'}", "-x", "cu", "-c",
                                             str(lib / "k.cu"), "-o", "k.o"]}]))
    return lib, db


def test_third_party_header_errors_are_summarised_not_the_librarys(tmp_path, capsys):
    lib, db = _library(tmp_path)
    out = tmp_path / "a.json"
    assert main(["analyze", str(lib), "--compile-db", str(db), "-q", "--no-cache", "-j", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("CM0103") == 1 and "; 0 errors, " in text
    a = json.loads(out.read_text())
    assert a["totals"]["errors"] == 0
    assert [d["id"] for d in a["diagnostics"] if d["severity"] == "error"] == []
    assert [tu["errors"] for tu in a["translation_units"]] == [0]
    summary = [d for d in a["diagnostics"] if d["id"] == "CM0103"]
    assert len(summary) == 1, a["diagnostics"]
    d = summary[0]
    include = tmp_path / "ext" / "include"
    assert d["severity"] == "warning" and d["count"] == 3          # two in broken.h, one in more.h
    assert f"3 clang error(s) in 2 third-party header(s) under {include} (broken/broken.h, broken/more.h)" in d["message"]
    assert "First: broken.h:3: unknown type name 'unknown_type_t'" in d["message"]
    assert d["file"] == str(include / "broken" / "broken.h") and d["line"] == 3
    # the kernel is still analysed
    assert [k["id"] for k in a["kernels"]] == ["k"]


def test_a_missing_header_inside_a_third_party_one_names_the_include_dir_to_add(tmp_path, monkeypatch):
    from codemod.analysis import analyze as module
    from codemod.model import Diagnostic

    header = str(tmp_path / "cudnn" / "include" / "cudnn_frontend" / "graph.h")
    diags = [Diagnostic("CM0101", "error", "'cudnn.h' file not found", header, 4, 10, 2),
             Diagnostic("CM0101", "error", "unknown type name 'x'", "ops/own.cu", 3, 1)]
    kept = module._third_party(diags)
    assert [d.id for d in kept] == ["CM0101", "CM0103"]
    assert kept[0].file == "ops/own.cu"          # the library's own error stays an error
    note = kept[1].message
    assert f"2 clang error(s) in 1 third-party header(s) under {tmp_path / 'cudnn' / 'include'} " \
           "(cudnn_frontend/graph.h)" in note
    assert "To parse them, add the include dir holding cudnn.h" in note


def test_the_librarys_own_errors_still_make_it_an_error(tmp_path, capsys):
    lib, db = _library(tmp_path, own_error=True)
    assert main(["analyze", str(lib), "--compile-db", str(db), "-q", "--no-cache", "-j", "1"]) == 1
    out = capsys.readouterr().out
    assert "error CM0101 k.cu:5" in out and "library_typo" in out and "CM0103" in out
    assert "; 1 errors, " in out
