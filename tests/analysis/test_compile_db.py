"""A golden parses to the same analysis with and without a compile database."""

import json

from codemod.analysis.analyze import analyze
from codemod.analysis.golden import REPO, normalized


def test_compile_db_gives_the_same_analysis(analyses, tmp_path):
    root = REPO / "golden" / "castlib" / "input"
    entries = []
    for tu in sorted(root.rglob("*.cu")):
        entries.append({"directory": str(tmp_path), "file": str(tu),
                        "arguments": ["nvcc", "-forward-unknown-to-host-compiler", f"-I{root / 'include'}",
                                      "-I", str(root / "src"), "-DCASTLIB_UNUSED=1", "-O3", "-std=c++17",
                                      "--generate-code=arch=compute_90,code=[sm_90]", "-x", "cu", "-c", str(tu),
                                      "-o", str(tmp_path / (tu.name + ".o"))]})
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps(entries))
    with_db = analyze(root, [], compile_db=db)
    assert normalized(with_db) == normalized(analyses["castlib"])


def test_html_report_shows_the_totals(analyses):
    from codemod.report.html import render_html

    a = analyses["actlib"]
    page = render_html(a)
    assert f'<b id="n-inst">{a.totals["instantiations"]}</b>' in page
    assert f'<b id="n-kernels">{a.totals["kernels"]}</b>' in page
    for k in a.kernels:
        assert f"<code>{k.id}</code>" in page


CXX20 = ("template <typename T> concept Small = sizeof(T) <= 4;\n"
         "template <Small T> __global__ void fill_kernel(T *p) { p[0] = T(1); }\n")


def _cxx20_tree(root):
    (root / "a.cu").write_text(CXX20 + "void fill_a(float *p) { fill_kernel<float><<<1, 1>>>(p); }\n")
    # listed nowhere in the database: parsed with the database's standard too
    (root / "b.cu").write_text(CXX20 + "void fill_b(int *p) { fill_kernel<int><<<1, 1>>>(p); }\n")
    db = root / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(root), "file": "a.cu",
                               "command": "nvcc --std c++20 -O3 -c a.cu -o a.o"}]))
    return db


def test_the_databases_language_standard_is_every_parses(tmp_path):
    """nvcc spells the standard four ways (`-std=c++20`, `--std=c++20`, `-std c++20`, `--std
    c++20`); before, only `-std=` reached clang and files the database does not list parsed as
    C++17, where `concept` is an error."""
    db = _cxx20_tree(tmp_path)
    a = analyze(tmp_path, [], compile_db=db, use_cache=False)
    assert a.totals["errors"] == 0, [d.message for d in a.diagnostics]
    assert {t.file: t.instantiations for t in a.translation_units} == {"a.cu": 1, "b.cu": 1}
    assert analyze(tmp_path, [], use_cache=False).totals["errors"] > 0   # C++17 without it


def test_standard_flag_spellings():
    from codemod.frontend.compile_db import standard_flag

    for argv in (["-std=c++20"], ["--std=c++20"], ["-std", "c++20"], ["--std", "c++20"], ["-std=c++17", "--std=c++20"]):
        assert standard_flag(["nvcc", *argv, "-c", "x.cu"]) == "-std=c++20", argv
    assert standard_flag(["nvcc", "-c", "x.cu"]) is None


def test_apply_analyses_with_the_compile_database(tmp_path, monkeypatch):
    """`codemod apply --compile-db FILE` hands the database to its analysis (the same parses as
    `analyze`); before, apply always parsed with the default C++17 flags."""
    import shutil

    import codemod.analysis.analyze as analyze_mod
    from codemod.cli import main

    root = tmp_path / "lib"
    shutil.copytree(REPO / "golden" / "routerlib" / "input", root)
    db = tmp_path / "compile_commands.json"
    db.write_text(json.dumps([{"directory": str(root), "file": "src/topk.cu", "command": "nvcc -std=c++20 -c src/topk.cu"}]))
    seen = []

    class Stop(Exception):
        pass

    def spy(root_, rules, compile_db=None, **kw):
        seen.append(compile_db)
        raise Stop

    monkeypatch.setattr(analyze_mod, "analyze", spy)
    try:
        main(["apply", str(root), "--target", str(REPO / "golden" / "routerlib" / "rule.yaml"),
              "--compile-db", str(db), "--allow-dirty", "--diff", str(tmp_path / "out.diff")])
    except Stop:
        pass
    assert seen == [db]
