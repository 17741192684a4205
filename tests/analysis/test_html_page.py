"""The analysis page (report/html.py): well-formed, self-contained, the rule's kernels and the
critical unit marked, build seconds where a build log is given, sortable tables, diagnostics grouped
by id and file, and no absolute path of the machine anywhere."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from codemod.analysis.pricing import attach_impact
from codemod.model import Diagnostic, TranslationUnit
from codemod.report.html import render_html, short_path
from tests.html_check import parse, self_contained, with_class
from tests.impact.conftest import TE_CSV, TE_LOG

from .test_pricing import MOVED, _analysis

GOLDEN_ROOT = Path(__file__).resolve().parents[2] / "golden" / "actlib" / "input"


def test_rule_kernels_and_the_critical_unit_are_marked(analyses):
    a = analyses["actlib"]
    rule = {"actlib::unary_kernel", "actlib::cast_fp8_kernel"}
    html = render_html(a, rule_kernels=rule, root=GOLDEN_ROOT)
    elements = parse(html)
    self_contained(html)
    assert sorted(with_class(elements, "tr", "rule", "data-kernel")) == sorted(rule)
    # the units that instantiate a rule kernel carry the mark; without a build log the critical
    # unit is the one with the most instantiations
    units = {tu.file for tu in a.translation_units if rule & set(tu.kernels)}
    assert sorted(with_class(elements, "tr", "rule", "data-tu")) == sorted(units)
    heaviest = max(a.translation_units, key=lambda tu: tu.instantiations).file
    assert with_class(elements, "tr", "critical", "data-tu") == [heaviest]
    assert f'<code id="critical-unit">{heaviest}</code>' in html and "no build log given" in html
    # every table of data sorts on a click (the script is inline)
    for table in ("tus", "kernels", "entries"):
        assert table in with_class(elements, "table", "sortable", "id")
    assert "<script>" in html and 'addEventListener("click"' in html and "<script src" not in html


def test_build_seconds_replace_instantiations_with_a_build_log():
    a = _analysis()
    # a unit the log does not build (added since): no price, an empty cell, the page still renders
    a.translation_units.append(TranslationUnit("activation/new_since.cu", [], {"cast_kernel": 2}, 2, 0.0, 0))
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    assert a.translation_units[-1].price is None
    a.totals = dict.fromkeys(("translation_units", "entry_points", "kernels", "kernel_templates", "launch_sites",
                              "use_sites", "instantiations", "errors", "warnings"), 0)
    html = render_html(a)
    elements = parse(html)
    priced = {tu.file: tu.price["elapsed_s"] for tu in a.translation_units if tu.price}
    # rows longest build first; the critical unit is the longest step of the log
    rows = [attrs["data-tu"] for tag, attrs in elements if tag == "tr" and "data-tu" in attrs]
    assert rows == sorted(priced, key=lambda f: -priced[f]) + ["activation/new_since.cu"]
    assert re.search(r'data-tu="activation/new_since.cu"><td data-v="activation/new_since.cu"><code>activation/new_since.cu'
                     r'</code></td>\s*<td class="n" data-v=""></td>', html)
    assert with_class(elements, "tr", "critical", "data-tu") == [max(priced, key=priced.get)]
    assert "the unit with the longest build step in the log" in html
    # the rule's unit (relu.cu, migrated by MOVED) has its measured and predicted bars
    relu = a.translation_units[0].price
    assert f'title="{relu["elapsed_s"]} s measured"' in html
    assert f'title="{relu["predicted_elapsed_s"]["instantiation_share"]} s predicted"' in html
    assert with_class(elements, "tr", "rule", "data-tu") == ["activation/relu.cu"]


def test_diagnostics_grouped_by_id_and_file_without_absolute_paths(analyses, tmp_path):
    a = copy.deepcopy(analyses["actlib"])
    root = tmp_path / "lib"
    root.mkdir()
    inside, header = f"{root}/activation/gelu.cu", "/opt/cuda-13/targets/x86_64-linux/include/cuda_fp8.h"
    a.diagnostics = [
        Diagnostic("CM0101", "error", f"{header}:12:3: error: unknown type name '__nv_fp8x4_e4m3'", header, 12, 3),
        Diagnostic("CM0101", "error", f"'{root}/common.h' file not found", inside, 3, 1),
        Diagnostic("CM0101", "error", "expected ';'", inside, 9, 1, count=2),
        Diagnostic("CM0102", "warning", "headers not found were replaced by empty stubs: cudnn.h", "cast/cast.cu", 1, 1),
    ]
    html = render_html(a, root=root)
    elements = parse(html)
    assert str(tmp_path) not in html and "/opt/" not in html
    assert not re.search(r"[\s>(\"']/(?:opt|tmp|usr|home|work|root)/", html)
    # one summary row per id (errors first), then per id one group per file, the paths relative
    summary = re.findall(r'<tr class="(\w+)"><td class="id"><a href="#diag-(CM\d+)"><code>\2</code></a></td><td>\w+</td>'
                         r'<td class="n">(\d+)</td><td class="n">(\d+)</td>', html)
    assert summary == [("error", "CM0101", "4", "2"), ("warning", "CM0102", "1", "1")]
    assert "<summary><code>activation/gelu.cu</code> (2)</summary>" in html
    assert "<summary><code>&lt;include&gt;/cuda_fp8.h</code> (1)</summary>" in html
    assert "&#39;common.h&#39; file not found" in html
    assert [a_["id"] for t, a_ in elements if t == "details" and a_.get("id", "").startswith("diag-")] == [
        "diag-CM0101", "diag-CM0102"]


def test_short_path():
    root = Path("/x/lib")
    assert short_path("/x/lib/a/b.cu", root) == "a/b.cu"
    assert short_path("a/b.cu", root) == "a/b.cu"
    assert short_path("/usr/local/cuda/include/cuda/std/type_traits", root) == "<include>/cuda/std/type_traits"
    assert short_path("/home/u/other/tree/file.h", root) == "…/tree/file.h"
    assert short_path("/x/lib", root) == "."
