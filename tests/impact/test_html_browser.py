"""The HTML report in a real headless browser: it renders offline, and every number shown equals
the JSON document's. Skips when Debian's chromium is not installed (apt-get install chromium)."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from codemod.impact.predict import predict_migration
from codemod.impact.report_html import render

from .conftest import TE_CSV, TE_LOG

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class _Nums(HTMLParser):
    """Collect (data-key, data-value, text) of every <span class="num">."""

    def __init__(self):
        super().__init__()
        self.nums, self._open = [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "span" and "data-key" in a:
            self._open = [a["data-key"], a["data-value"], ""]

    def handle_data(self, data):
        if self._open is not None:
            self._open[2] += data

    def handle_endtag(self, tag):
        if tag == "span" and self._open is not None:
            self.nums.append(tuple(self._open))
            self._open = None


def _lookup(doc, key):
    cur = doc
    for part in key.split("."):
        cur = cur[part]
    return cur


def _check_numbers(html: str, doc: dict) -> int:
    parser = _Nums()
    parser.feed(html)
    assert parser.nums, "no numbers found in the page"
    for key, value, text in parser.nums:
        expected = _lookup(doc, key)
        assert float(value) == expected, key
        digits = len(text.split(".")[1]) if "." in text else 0
        assert float(text) == pytest.approx(round(expected, digits), abs=10 ** -digits / 2), (key, text)
    return len(parser.nums)


def test_template_numbers_equal_json(at_repo):
    doc = predict_migration(TE_LOG, [TE_CSV], ["activation/*.cu", "cast/*.cu"])
    html = render(doc)
    assert _check_numbers(html, doc) >= 20
    # self-contained: nothing fetched from the network
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium not installed (apt-get install -y chromium)")
def test_rendered_dom_numbers_equal_json(at_repo, tmp_path):
    doc = predict_migration(TE_LOG, [TE_CSV], ["activation/*.cu", "cast/*.cu"])
    page = tmp_path / "report.html"
    page.write_text(render(doc), encoding="utf-8")
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    base = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}"]
    dom = subprocess.run(base + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert _check_numbers(dom.stdout, doc) >= 20
    assert dom.stdout.count("<rect") >= 98 + 77  # every step drawn: 98 before, 77 after
    rows = re.findall(r'<tr data-step="([^"]+)"><td data-col="elapsed_s">([0-9.]+)</td>', dom.stdout)
    assert [(n, float(v)) for n, v in rows] == [(r["name"], r["elapsed_s"]) for r in doc["steps"]]
    res = subprocess.run(base + ["--window-size=1150,1700", f"--screenshot={shot}", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and shot.stat().st_size > 20_000, res.stderr[-2000:]
