"""`codemod verify --html F`: a well-formed, self-contained page of the NVRTC programs with their
time, the host compile and the failures with their log and next step; no absolute path."""

from __future__ import annotations

from pathlib import Path

from codemod.cli import main
from codemod.report.html import render_verify_html
from codemod.verify.host import HostReport, HostResult
from codemod.verify.programs import Failure, ProgramResult
from codemod.verify.report import VerifyReport
from tests.html_check import parse, self_contained

from .conftest import _nvrtc_or_skip, migrated_golden


def test_verify_html_on_the_migrated_golden_tree(tmp_path):
    _nvrtc_or_skip()
    root = migrated_golden("actlib", "activation", tmp_path / "tree")
    page = tmp_path / "verify.html"
    rc = main(["verify", str(root), "--no-host", "--arch", "sm_90", "--kernel", "actlib::reduce_dbias_kernel",
               "--html", str(page), "-q"])
    assert rc == 0
    html = page.read_text()
    parse(html)
    self_contained(html)
    assert str(tmp_path) not in html
    assert '<span id="verdict" class="ok">passed</span>' in html
    assert '<b id="n-programs">2 / 2</b>' in html          # the default and the fast-math option set
    assert 'data-kernel="actlib::reduce_dbias_kernel"' in html and 'id="no-failures"' in html
    assert "Skipped: --no-host" in html


def test_failures_are_grouped_with_their_log_and_next_step(tmp_path):
    lib = tmp_path / "lib"
    log = f'{lib}/rtc/kernels.h(4): catastrophic error: cannot open source file "cudnn.h"'
    programs = [ProgramResult(k, arch, "default", 2, 4, ok, 1.5 + i, cpu_seconds=1.0,
                              failures=[] if ok else [Failure("k<float>", "variant", log)])
                for i, (k, arch, ok) in enumerate([("ns::a", "sm_90", True), ("ns::b", "sm_90", False),
                                                   ("ns::b", "sm_120", False)])]
    host = HostReport("failed", reason=f"CMake configure of the patched tree failed:\n  {lib}/CMakeLists.txt:3: "
                                       "could not find cudnn_frontend.h")
    report = VerifyReport([f"{tmp_path}/state/activation.json"], ["sm_90", "sm_120"], False, "13.0", 2,
                          programs, host, 7.25, kernels=2, variants_total=8)
    html = render_verify_html(report.to_json(), lib)
    parse(html)
    assert str(tmp_path) not in html
    assert '<span id="verdict" class="error">FAILED</span>' in html
    assert '<b id="n-programs">1 / 3</b>' in html
    # one failure block for b on both archs, its log relative to the library, the hint from verify
    assert html.count('<div class="failure">') == 1 and "[sm_90, sm_120]" in html
    assert "rtc/kernels.h(4): catastrophic error: cannot open source file &#34;cudnn.h&#34;" in html
    assert "Next: a header is neither bundled" in html
    # the environment failure is told in the summary: the CMake configure, not the generated code
    assert "host code: CMake configure of the patched tree failed" in html
    assert "CMakeLists.txt:3: could not find cudnn_frontend.h" in html
    assert "manifest <code>activation.json</code>" in html


def test_cells_hold_each_program_time(tmp_path):
    programs = [ProgramResult("ns::a", arch, "default", 1, 1, True, s) for arch, s in (("sm_90", 2.5), ("sm_120", 3.25))]
    report = VerifyReport(["m.json"], ["sm_90", "sm_120"], False, "13.0", 1, programs,
                          HostReport("passed", compiler="nvcc", results=[HostResult("a.cu", True, 4.0)]), 9.0, 1, 1)
    html = render_verify_html(report.to_json(), Path(tmp_path))
    parse(html)
    assert '<td class="n" data-v="2.5">2.50</td><td class="n" data-v="3.25">3.25</td>' in html
    assert '<td class="n">5.75</td>' in html and "<code>a.cu</code></td><td>ok</td>" in html
