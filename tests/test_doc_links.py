"""Every relative link of the README and the docs names a file or folder of the repository (an
anchor after `#` is not checked); links inside code blocks and inline code are not links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# [text](target) and ![alt](target), the target up to the first space or ')'; <a href="...">
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|href=\"([^\"]+)\"")
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")


def relative_links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every relative link outside code."""
    out, in_fence = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line.lstrip()):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for m in LINK.finditer(INLINE_CODE.sub("", line)):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue          # http:, https:, mailto:, a link inside the page
            out.append((number, target))
    return out


def test_the_scanner_finds_links_and_skips_code():
    text = ("see [a](docs/x.md#y) and ![s](shots/p.png) and [w](https://e.org) and [i](#here)\n"
            "`[not](a/link.md)`\n```\n[nor](this.md)\n```\n<a href=\"f.html\">f</a>\n")
    assert relative_links(text) == [(1, "docs/x.md#y"), (1, "shots/p.png"), (6, "f.html")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    broken = []
    for number, target in relative_links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(f"{page.relative_to(REPO)}:{number}: {target}")
    assert not broken, "broken relative links:\n" + "\n".join(broken)
