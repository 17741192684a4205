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
