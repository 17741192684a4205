"""The analysis and verify pages in a real headless browser: no sideways scroll at 1000 px with
long names and logs, and a click on a column header sorts the table. Skips when Debian's chromium
is not installed (apt-get install chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from codemod.analysis.pricing import attach_impact
from codemod.model import Diagnostic, Kernel
from codemod.report.html import render_html, render_verify_html
from codemod.verify.host import HostReport
from codemod.verify.programs import Failure, ProgramResult
from codemod.verify.report import VerifyReport
from tests.impact.conftest import TE_CSV, TE_LOG
from tests.impact.test_html_browser import FLAGS

from .test_pricing import MOVED, _analysis

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install -y chromium)")

# run after the page's own script: click a header, then record the rows' order and the overflow
PROBE = """<script>
var th = document.querySelector("#%s thead th:nth-child(%d)");
if (th) { th.click(); %s }
var rows = document.querySelectorAll("#%s tbody tr");
document.body.setAttribute("data-order", Array.prototype.map.call(rows, function (r) { return r.dataset.tu || r.dataset.kernel; }).join("|"));
document.body.setAttribute("data-overflow", String(document.documentElement.scrollWidth - window.innerWidth));
</script>"""


def _dom(page: str, tmp_path, table: str, column: int, clicks: int = 1) -> tuple[list[str], int]:
    probe = PROBE % (table, column, "th.click();" * (clicks - 1), table)
    path = tmp_path / "page.html"
    path.write_text(page.replace("</body>", probe + "\n</body>"), encoding="utf-8")
    out = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,800",
                          "--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    order = re.search(r'data-order="([^"]*)"', out.stdout).group(1).split("|")
    overflow = int(re.search(r'data-overflow="(-?\d+)"', out.stdout).group(1))
    return order, overflow


def test_analysis_page_sorts_and_does_not_scroll_sideways(tmp_path):
    a = _analysis()
    attach_impact(a, TE_LOG, [TE_CSV], MOVED)
    a.totals = dict.fromkeys(("translation_units", "entry_points", "kernels", "kernel_templates", "launch_sites",
                              "use_sites", "instantiations", "errors", "warnings"), 0)
    long = "transformer_engine::dispatch::mxfp8::group_quantize_kernel::" + "x" * 180
    a.kernels = [Kernel(long, "k", "cast/" + "deep/" * 30 + "k.cuh", 1, True, [], instantiations=3)]
    a.diagnostics = [Diagnostic("CM0101", "error", "e" * 400, "a.cu", 1, 1)]
    html = render_html(a)
    by_build = sorted((tu for tu in a.translation_units if tu.price), key=lambda tu: tu.price["elapsed_s"])
    # "build s" (column 2): the first click sorts longest first, the second shortest first
    order, overflow = _dom(html, tmp_path, "tus", 2, clicks=2)
    assert order[:len(by_build)] == [tu.file for tu in by_build]
    assert overflow <= 0
    order, _ = _dom(html, tmp_path, "tus", 1, clicks=1)      # text: A to Z, the marks not counted
    assert order == sorted(tu.file for tu in a.translation_units)


def test_verify_page_with_a_long_log_does_not_scroll_sideways(tmp_path):
    log = "kernels.h(1): error: " + "very_long_template_argument_list_" * 40
    programs = [ProgramResult(f"ns::kernel_{i}", "sm_90", "default", 1, 1, i != 2, float(i),
                              failures=[] if i != 2 else [Failure("v", "variant", log)]) for i in range(4)]
    report = VerifyReport(["m.json"], ["sm_90"], False, "13.0", 1, programs, HostReport("skipped", "--no-host"), 6.0)
    order, overflow = _dom(render_verify_html(report.to_json(), tmp_path), tmp_path, "programs", 3)
    assert order == ["ns::kernel_3", "ns::kernel_2", "ns::kernel_1", "ns::kernel_0"]   # by sm_90 seconds, longest first
    assert overflow <= 0
