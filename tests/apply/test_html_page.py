"""`codemod apply --html F`: a well-formed, self-contained page of what changes per file, the
kernels migrated with the instantiations they take out of the build, and the predicted build; no
absolute path of the machine."""

from __future__ import annotations

import re

from codemod.apply.command import compute
from codemod.cli import main
from codemod.report.html import render_apply_html
from tests.html_check import parse, self_contained, with_class

from .test_build_order import RULE, build_log  # noqa: F401  (fixture)


def test_apply_html_lists_files_fanout_and_prediction(actlib_git, build_log, tmp_path):  # noqa: F811
    log, csv = build_log
    page, diff = tmp_path / "apply.html", tmp_path / "out.patch"
    assert main(["apply", "--target", RULE, str(actlib_git), "--diff", str(diff), "--html", str(page),
                 "--no-precheck", "--build-log", str(log), "--nvcc-time", str(csv), "-q"]) == 0
    html = page.read_text()
    elements = parse(html)
    self_contained(html)
    assert str(tmp_path) not in html
    # one row per file of the diff, the new ones marked
    patched = re.findall(r"^diff --git a/(\S+) ", diff.read_text(), re.M)
    rows = [a["data-file"] for t, a in elements if t == "tr" and "data-file" in a]
    assert sorted(rows) == sorted(set(patched))
    new = set(re.findall(r"^diff --git a/(\S+) .*\nnew file mode", diff.read_text(), re.M))
    assert new and html.count('</code><span class="mark new">new</span>') == len(new)
    # the fan-out removed: every rule kernel with its instantiations, and their sum
    files, _, plan = compute(actlib_git, RULE)
    kernels = {kp.kernel.id: kp.kernel.instantiations for kp in plan.kernels}
    assert sorted(with_class(elements, "tr", "rule", "data-kernel")) == sorted(kernels)
    assert f'<b id="n-fanout">{sum(kernels.values())}</b>' in html
    # the build predicted from the log: 130 s after the migration, 108 s with the build-order edit
    assert '<b id="predicted-order">108.0 s</b>' in html and "→ 130.0 s</b>" in html
    assert "util/rtc.cpp" in html and "in the diff (2 units listed first in <code>actlib_sources</code>)" in html


def test_without_a_build_log_the_page_says_how_to_predict(actlib_git):
    files, _, plan = compute(actlib_git, RULE)
    html = render_apply_html(actlib_git, RULE, files, plan, "summary line")
    parse(html)
    assert 'id="no-prediction"' in html and "--build-log" in html
    assert str(actlib_git.parent) not in html
    # lines added and removed per file match the changes
    old, new = files["CMakeLists.txt"]
    assert old is not None and re.search(r'data-file="CMakeLists.txt"><td><code>CMakeLists.txt</code></td>'
                                         r'<td>modified</td><td class="n">(\d+)</td>', html)
