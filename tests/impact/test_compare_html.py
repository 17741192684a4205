"""`codemod impact A --against B --html F` writes the comparison page (it used to exit 0 and write
nothing): well-formed, self-contained, the document's walls and ratios, every common step once,
the largest change first."""

from __future__ import annotations

import json
import re
from pathlib import Path

from codemod.cli import main
from tests.html_check import parse, self_contained

RUN = Path(__file__).resolve().parents[2] / "docs" / "results" / "te_build" / "run7_issue13"


def test_against_writes_the_comparison_page(tmp_path, capsys):
    page, doc_path = tmp_path / "compare.html", tmp_path / "compare.json"
    assert main(["impact", str(RUN / "original.ninja_log"), "--nvcc-time", str(RUN / "original.nvcc_time.csv.gz"),
                 "--against", str(RUN / "migrated.ninja_log"), "--against-nvcc-time",
                 str(RUN / "migrated.nvcc_time.csv.gz"), "--json", str(doc_path), "--html", str(page)]) == 0
    assert "B/A: wall x0.421" in capsys.readouterr().out
    doc, html = json.loads(doc_path.read_text()), page.read_text()
    elements = parse(html)
    self_contained(html)
    assert f'<b id="wall-a">{doc["a"]["wall_s"]:.1f} s</b>' in html and f'<b id="wall-b">{doc["b"]["wall_s"]:.1f} s</b>' in html
    assert f'<b id="wall-ratio">×{doc["wall_ratio"]}</b>' in html and "(-57.9%)" in html
    rows = [a["data-step"] for t, a in elements if t == "tr" and "data-step" in a]
    assert sorted(rows) == sorted(r["name"] for r in doc["steps"])
    biggest = max(doc["steps"], key=lambda r: abs(r["delta_s"]))
    assert rows[0] == biggest["name"] and rows[0].endswith("activation/gelu_grouped.cu.o")
    assert re.search(r"<td class=\"n\">-389\.4</td><td class=\"n\">0\.25</td>", html)
    assert str(tmp_path) not in html
